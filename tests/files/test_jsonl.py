"""The shared JSON-lines reader."""

from __future__ import annotations

import json

import pytest

from m3agent.errors import M3AgentError
from m3agent.files.jsonl import (
    JsonLinesError,
    LineError,
    file_lines,
    json_lines,
    loads,
    numbered_lines,
    read_json_lines,
    read_text,
)


def test_values_in_order_blank_lines_skipped_and_only_newlines_split(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join([json.dumps({"a": 1}), "", "  ", json.dumps("x\u2028y", ensure_ascii=False), "3"]) + "\n",
                    encoding="utf-8")
    assert read_json_lines(path) == [{"a": 1}, "x\u2028y", 3]
    assert list(numbered_lines("a\n\nb\r\n")) == [(1, "a"), (3, "b\r")]


def test_a_bad_line_is_named_and_a_torn_last_line_dropped_only_when_asked(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n{oops\n{"b": 2}\n', encoding="utf-8")
    with pytest.raises(JsonLinesError, match=r"a\.jsonl:2: not JSON"):
        read_json_lines(path)
    torn = '{"a": 1}\n{"b": 2'
    assert [n for n, _ in json_lines(torn, "t", torn_tail=True)] == [1]
    with pytest.raises(M3AgentError, match="line 2 of t"):
        list(json_lines(torn, "t", message="line {number} of {source}"))
    with pytest.raises(JsonLinesError, match="cannot read"):
        read_json_lines(tmp_path / "missing.jsonl")


def test_utf8_with_a_bom_and_utf16_read_alike(tmp_path):
    lines = [{"id": 1, "text": "Zoë said 你好"}, {"id": 2, "text": "😀"}]
    text = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in lines)
    for name, data in (("bom", b"\xef\xbb\xbf" + text.encode()), ("le", text.encode("utf-16")),
                       ("be", b"\xfe\xff" + text.encode("utf-16-be"))):
        (tmp_path / name).write_bytes(data)
        assert read_json_lines(tmp_path / name) == lines, name


def test_a_lone_surrogate_is_refused_like_a_line_that_is_not_json_and_a_pair_is_text():
    assert loads('"\\ud83d\\ude00"') == "😀"
    for bad in ('"\\ud800"', '{"a": ["x\\udfff"]}', '{"\\udc00": 1}'):
        with pytest.raises(LineError, match="lone surrogate"):
            loads(bad)
    with pytest.raises(JsonLinesError, match=r"s:2: not JSON \(holds a lone surrogate \\ud800"):
        list(json_lines('{"a": 1}\n{"a": "\\ud800"}\n', "s"))


def test_a_file_without_newlines_is_refused_at_its_line_without_being_held(tmp_path):
    path = tmp_path / "long.jsonl"
    with path.open("w") as fh:
        fh.write('{"a": 1}\n')
        fh.write("x" * 3_000_000)  # one line of 3 M characters, no newline
        fh.write('\n{"b": 2}\n')
    got = list(file_lines(path, max_line=1_000_000))
    assert got == [(1, '{"a": 1}'), (2, None), (3, '{"b": 2}')]
    with pytest.raises(JsonLinesError, match=r"long.jsonl:2: not JSON \(longer than 1,000,000 characters"):
        read_json_lines(path, max_line=1_000_000)
    (tmp_path / "tail").write_text('{"a": 1}\n' + "y" * 2_000_001)
    assert list(file_lines(tmp_path / "tail", max_line=1_000_000)) == [(1, '{"a": 1}'), (2, None)]


def test_binary_and_endless_input_are_errors_naming_the_line(tmp_path):
    (tmp_path / "bin").write_bytes(b'{"a": 1}\n{"b": \x00\x00}')
    with pytest.raises(JsonLinesError, match=r"bin:2: NUL byte"):
        read_json_lines(tmp_path / "bin")
    (tmp_path / "latin").write_bytes('{"a": 1}\n"café"\n'.encode("latin-1"))
    with pytest.raises(JsonLinesError, match=r"latin:2: not UTF-8 text \(byte 0xe9\)"):
        read_json_lines(tmp_path / "latin")
    with pytest.raises(JsonLinesError, match=r"/dev/zero:1: NUL byte"):
        read_json_lines("/dev/zero")  # read a chunk at a time: refused at once, not read forever


def test_a_whole_file_read_stops_at_its_limit(tmp_path):
    (tmp_path / "big.json").write_text("[" + "1," * 1000 + "1]")
    assert len(read_text(tmp_path / "big.json")) == 2003
    with pytest.raises(JsonLinesError, match="holds more than 1,000 characters"):
        read_text(tmp_path / "big.json", limit=1000)
