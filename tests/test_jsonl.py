"""The shared JSON-lines reader and the open-once shelf."""

from __future__ import annotations

import json
import threading

import pytest

from m3agent.errors import M3AgentError
from m3agent.jsonl import JsonLinesError, json_lines, numbered_lines, read_json_lines
from m3agent.shelf import Shelf


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


def test_a_shelf_opens_each_key_once_and_closes_what_it_opened():
    opened, closed = [], []
    shelf = Shelf(lambda key: opened.append(key) or [key], closer=closed.append, lock=threading.Lock())
    first = shelf.get("a")
    assert shelf.get("a") is first and shelf.get("b") == ["b"] and opened == ["a", "b"] and len(shelf) == 2
    shelf.close()
    assert closed == [["a"], ["b"]] and "a" not in shelf
