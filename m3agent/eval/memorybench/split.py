"""MemoryBench's train/test split, reproduced: per dataset, seed 42, 20% test.

The published procedure (MemoryBench's ``get_test_ids``): a dataset larger than its pool (250, or 25 per
Locomo conversation, 83/83/84 for the DialSim scripts) is first cut to a sample of the pool drawn with a
fresh ``random.Random(42)``; then ``ceil(0.2 * n)`` test ids are drawn from that list with another fresh
``random.Random(42)``; the rest, in list order, is the training set. HelloBench and WritingBench split
each of their domains alike, without a cap.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from m3agent.eval.memorybench.datasets import dataset_info
from m3agent.eval.memorybench.records import MBRecord

SEED = 42
TEST_RATIO = 0.2


def fixed_sample(items: Sequence, k: int, seed: int = SEED) -> list:
    return random.Random(seed).sample(list(items), k)


def split_ids(ids: Sequence[Hashable], pool: int | None, test_ratio: float = TEST_RATIO,
              seed: int = SEED) -> tuple[list, list]:
    """``(train ids, test ids)`` of one dataset."""
    ids = list(ids)
    if pool is not None and len(ids) > pool:
        ids = fixed_sample(ids, pool, seed)
    test = fixed_sample(ids, math.ceil(test_ratio * len(ids)), seed)
    chosen = set(test)
    return [i for i in ids if i not in chosen], test


@dataclass
class Split:
    train: list[MBRecord]
    test: list[MBRecord]


def split_records(records: Sequence[MBRecord], test_ratio: float = TEST_RATIO, seed: int = SEED) -> dict[str, Split]:
    """Each dataset's split (records with a ``problem`` are left out; the harness reports them)."""
    by_dataset: dict[str, list[MBRecord]] = {}
    for record in records:
        if record.problem is None:
            by_dataset.setdefault(record.dataset, []).append(record)
    out = {}
    for name, items in sorted(by_dataset.items()):
        info = dataset_info(name)
        if all(r.split for r in items):  # the source is split already (the published train/test folders)
            out[name] = Split([r for r in items if r.split == "train"], [r for r in items if r.split == "test"])
            continue
        if info.stratify:
            train_ids, test_ids = [], []
            domains: dict[str, list[MBRecord]] = {}
            for r in items:
                domains.setdefault(str(r.info.get("domain", "")), []).append(r)
            for group in domains.values():
                tr, te = split_ids([r.test_idx for r in group], None, test_ratio, seed)
                train_ids += tr
                test_ids += te
        else:
            train_ids, test_ids = split_ids([r.test_idx for r in items], info.pool, test_ratio, seed)
        by_id = {r.test_idx: r for r in items}
        out[name] = Split([by_id[i] for i in train_ids], [by_id[i] for i in test_ids])
    return out
