"""Reading MemoryBench records and corpora: the fixture, the published Arrow layout, bad records."""

import json

import pyarrow as pa

from m3agent.eval.memorybench.records import load_corpus, load_records
from tests.data import MEMORYBENCH

FIXTURE = MEMORYBENCH


def test_the_fixture_covers_the_four_formats_and_marks_bad_records():
    from m3agent.eval.memorybench.datasets import dataset_info

    records = load_records(FIXTURE / "records.jsonl")
    good = [r for r in records if r.problem is None]
    assert {dataset_info(r.dataset).task for r in good} == {"LiSo", "SiLo", "LiLo", "SiSo"}
    assert {dataset_info(r.dataset).corpus for r in good} == {True, False}  # both feedback paths
    problems = [r.problem for r in records if r.problem]
    assert len(problems) == 2 and any("not JSON" in p for p in problems)
    locomo = next(r for r in good if r.dataset == "Locomo-0")
    assert locomo.reference() and locomo.info["category"] == 4 and locomo.feedback[0].round == 1
    assert locomo.dialog[0]["role"] == "user" and "Question:" in locomo.question()


def test_the_published_arrow_layout_is_read_with_its_splits(tmp_path):
    rows = [json.loads(line) for line in (FIXTURE / "records.jsonl").read_text().splitlines()
            if line.startswith("{") and '"NFCats"' in line and "input_prompt" in line]
    for split, part in (("train", rows[:3]), ("test", rows[3:])):
        folder = tmp_path / "dataset" / "NFCats" / split
        folder.mkdir(parents=True)
        table = pa.Table.from_pylist(part)
        with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink:
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
        (folder / "state.json").write_text("{}")
    records = load_records(tmp_path / "dataset")
    assert [r.split for r in records] == ["test"] * 2 + ["train"] * 3
    assert all(r.problem is None and r.dataset == "NFCats" for r in records)


def test_corpora_in_the_published_layout():
    turns = load_corpus(FIXTURE / "corpus" / "Locomo-0.jsonl")["Locomo-0"]
    assert turns[0] == {"id": "D1:1", "text": "I started pottery classes at the community studio last week.",
                        "time": "1:56 pm on 8 May, 2023", "speaker": "Maya", "session": "1"}
    assert "[shares a photo: a blue clay vase on a table]" in turns[4]["text"]


def test_missing_and_unreadable_sources(tmp_path):
    import pytest

    from m3agent.eval.memorybench.records import MemoryBenchDataError

    with pytest.raises(MemoryBenchDataError, match="not found"):
        load_records(tmp_path / "none")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MemoryBenchDataError, match="holds no"):
        load_records(tmp_path / "empty")
    (tmp_path / "bad.arrow").write_bytes(b"not arrow")
    with pytest.raises(MemoryBenchDataError, match="cannot read"):
        load_records(tmp_path / "bad.arrow")


def test_a_damaged_corpus_is_an_error_not_a_conversation_answered_without_it(tmp_path):
    import pytest

    from m3agent.eval.memorybench.records import MemoryBenchDataError

    good = (FIXTURE / "corpus" / "Locomo-0.jsonl").read_text(encoding="utf-8")
    for name, text in (("torn", good + '{"text": "half a row'), ("surrogate", good + '{"text": "\\ud800"}\n'),
                       ("list", good + "[1, 2]\n")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(MemoryBenchDataError, match=f"corpus {path}"):
            load_corpus(path)
    (tmp_path / "binary.jsonl").write_bytes(b"\x00\x01\x02")
    with pytest.raises(MemoryBenchDataError, match="NUL byte"):
        load_corpus(tmp_path / "binary.jsonl")
