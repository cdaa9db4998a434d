"""The split reproduces MemoryBench's published sizes (seed 42, 20% test, pools of 250, 25, 83/84)."""

import pytest

from m3agent.eval.memorybench.records import MBRecord
from m3agent.eval.memorybench.split import split_ids, split_records


@pytest.mark.parametrize("total, pool, test, train", [
    (2505, 250, 50, 200),  # JuDGE
    (1000, 250, 50, 200),  # LexEval-Summarization, JRE-L, LimitGen-Syn
    (2374, 250, 50, 200),  # IdeaBench
    (199, 25, 5, 20),  # Locomo-0: 25 per conversation
    (300, 83, 17, 66),  # DialSim-friends, -bigbang
    (300, 84, 17, 67),  # DialSim-theoffice
    (82, None, 17, 65),  # HelloBench-Academic&Knowledge-Writing, uncapped
    (167, None, 34, 133),  # WritingBench-Academic&Engineering
])
def test_published_sizes(total, pool, test, train):
    tr, te = split_ids(list(range(total)), pool)
    assert (len(te), len(tr)) == (test, train)
    assert not set(tr) & set(te)


def test_the_split_is_the_same_every_time_and_keeps_list_order():
    first = split_ids(list(range(1000)), 250)
    assert first == split_ids(list(range(1000)), 250)
    assert split_ids(list(range(1000)), 250, seed=7) != first
    train, test = split_ids(list(range(10)), None)
    assert train == sorted(train) and len(test) == 2


def records(name, n, **info):
    return [MBRecord(name, str(i), prompt=f"q{i}", info=dict(info, domain=f"d{i % 2}")) for i in range(n)]


def test_datasets_split_apart_and_given_splits_are_kept():
    given = [MBRecord("NFCats", str(i), prompt="q", split="test" if i < 3 else "train") for i in range(10)]
    broken = [MBRecord("NFCats", "x", problem="malformed")]
    out = split_records(records("JuDGE", 400) + given + broken)
    assert (len(out["JuDGE"].train), len(out["JuDGE"].test)) == (200, 50)
    assert [r.test_idx for r in out["NFCats"].test] == ["0", "1", "2"] and len(out["NFCats"].train) == 7


def test_hellobench_and_writingbench_split_each_domain():
    out = split_records(records("WritingBench-Politics&Law", 21))
    # two domains of 11 and 10: ceil(2.2) + ceil(2.0) = 5 (unstratified it would be ceil(4.2) = 5 too, so check per domain)
    by_domain = {}
    for r in out["WritingBench-Politics&Law"].test:
        by_domain[r.info["domain"]] = by_domain.get(r.info["domain"], 0) + 1
    assert by_domain == {"d0": 3, "d1": 2}
