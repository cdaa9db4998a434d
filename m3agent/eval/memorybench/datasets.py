"""What MemoryBench says about each dataset: its domain, task format, metric, split pool, and the
published min and max its scores are normalized with.

Task formats: LiSo (long input, short output), SiLo, LiLo, SiSo. Locomo comes as ten configs
(``Locomo-0`` ... ``Locomo-9``, one per conversation) scored together as "Locomo". The min/max table is
the published ``configs/final_evaluate_summary_wo_details.json`` of the MemoryBench repository
(THUIR/MemoryBench): per group (a domain or a task format) and dataset, the range of all baselines'
off-policy scores, used as a fixed scale for every other run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from m3agent.errors import M3AgentError

DOMAINS = ("Open-Domain", "Academic&Knowledge", "Legal")
TASKS = {"LiSo": "Long-Short", "SiLo": "Short-Long", "LiLo": "Long-Long", "SiSo": "Short-Short"}


class UnknownDatasetError(M3AgentError, ValueError):
    pass


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    domain: str
    task: str  # LiSo, SiLo, LiLo, SiSo
    metric: str  # locomo_f1, dialsim_accuracy, rouge_l, meteor, judge_5, judge_10, checklist
    corpus: bool = False  # questions about a long corpus the user simulator may not see (metric feedback path)
    pool: int = 250  # at most this many records enter the split
    stratify: bool = False  # HelloBench and WritingBench split each of their domains alike, uncapped

    @property
    def long_output(self) -> bool:
        return self.task.endswith("Lo")


_TABLE = [
    DatasetInfo("Locomo", "Open-Domain", "LiSo", "locomo_f1", corpus=True, pool=25),
    DatasetInfo("DialSim-friends", "Open-Domain", "LiSo", "dialsim_accuracy", corpus=True, pool=83),
    DatasetInfo("DialSim-bigbang", "Open-Domain", "LiSo", "dialsim_accuracy", corpus=True, pool=83),
    DatasetInfo("DialSim-theoffice", "Open-Domain", "LiSo", "dialsim_accuracy", corpus=True, pool=84),
    DatasetInfo("HelloBench-Creative&Design", "Open-Domain", "LiLo", "checklist", stratify=True),
    DatasetInfo("WritingBench-Creative&Design", "Open-Domain", "LiLo", "judge_10", stratify=True),
    DatasetInfo("WritingPrompts", "Open-Domain", "SiLo", "meteor"),
    DatasetInfo("NFCats", "Open-Domain", "SiSo", "judge_5"),
    DatasetInfo("HelloBench-Academic&Knowledge-QA", "Academic&Knowledge", "SiLo", "checklist", stratify=True),
    DatasetInfo("HelloBench-Academic&Knowledge-Writing", "Academic&Knowledge", "LiLo", "checklist", stratify=True),
    DatasetInfo("IdeaBench", "Academic&Knowledge", "LiSo", "judge_10"),
    DatasetInfo("JRE-L", "Academic&Knowledge", "SiSo", "judge_10"),
    DatasetInfo("LimitGen-Syn", "Academic&Knowledge", "LiSo", "judge_5"),
    DatasetInfo("WritingBench-Academic&Engineering", "Academic&Knowledge", "LiLo", "judge_10", stratify=True),
    DatasetInfo("JuDGE", "Legal", "SiLo", "judge_10"),
    DatasetInfo("LexEval-Summarization", "Legal", "LiSo", "rouge_l"),
    DatasetInfo("LexEval-Judge", "Legal", "LiLo", "rouge_l"),
    DatasetInfo("LexEval-QA", "Legal", "SiSo", "rouge_l"),
    DatasetInfo("WritingBench-Politics&Law", "Legal", "LiLo", "judge_10", stratify=True),
]
DATASETS = {d.name: d for d in _TABLE}
_LOCOMO = re.compile(r"^locomo[-_]?\d+$", re.IGNORECASE)


def scored_as(name: str) -> str:
    """The dataset a config is scored as: ``Locomo-7`` counts as ``Locomo``."""
    return "Locomo" if _LOCOMO.match(name) else name


def dataset_info(name: str) -> DatasetInfo:
    try:
        return DATASETS[scored_as(name)]
    except KeyError:
        raise UnknownDatasetError(f"unknown MemoryBench dataset {name!r}; known: {', '.join(DATASETS)}") from None


#: published (min, max) per group and dataset (THUIR/MemoryBench configs/final_evaluate_summary_wo_details.json)
STATS: dict[str, dict[str, tuple[float, float]]] = {
    "Open-Domain": {
        "DialSim-bigbang": (0, 1), "DialSim-friends": (0, 1), "DialSim-theoffice": (0, 1),
        "HelloBench-Creative&Design": (0.0, 1.0), "Locomo": (0, 1), "NFCats": (1, 5),
        "WritingBench-Creative&Design": (1, 9), "WritingPrompts": (0.019652800524074678, 0.3009784401102524)},
    "Academic&Knowledge": {
        "HelloBench-Academic&Knowledge-QA": (0.0, 1.0), "HelloBench-Academic&Knowledge-Writing": (0.0, 1.0),
        "IdeaBench": (0, 9), "JRE-L": (0, 8), "LimitGen-Syn": (0, 5), "WritingBench-Academic&Engineering": (1, 9)},
    "Legal": {
        "JuDGE": (1, 10), "LexEval-Judge": (0.0, 0.42372880887182207), "LexEval-QA": (0.0, 0.3692307652260355),
        "LexEval-Summarization": (0.0, 0.4749999956570313), "WritingBench-Politics&Law": (1, 9)},
    "LiSo": {
        "DialSim-bigbang": (0, 1), "DialSim-friends": (0, 1), "DialSim-theoffice": (0, 1), "IdeaBench": (0, 9),
        "LexEval-Summarization": (0.04999999511250048, 0.5032258020362124), "LimitGen-Syn": (0, 4),
        "Locomo": (0, 1.0)},
    "SiLo": {
        "HelloBench-Academic&Knowledge-QA": (0.32142857142857145, 1.0), "JuDGE": (0, 10),
        "WritingPrompts": (0.02615233736515201, 0.3184997922906895)},
    "LiLo": {
        "HelloBench-Academic&Knowledge-Writing": (0.625, 1.0), "HelloBench-Creative&Design": (0.0, 1.0),
        "LexEval-Judge": (0.0, 0.43559718484168736), "WritingBench-Academic&Engineering": (1, 9),
        "WritingBench-Creative&Design": (1, 9), "WritingBench-Politics&Law": (1, 9)},
    "SiSo": {"JRE-L": (2, 8), "LexEval-QA": (0.0, 0.3616236123342547), "NFCats": (1, 5)},
}

#: best published off-policy micro means with Qwen3-8B (MemoryBench leaderboard), for the report
PUBLISHED_BEST = {"Open-Domain": ("Emb-S", 0.6582), "Academic&Knowledge": ("Emb-S", 0.7185), "Legal": ("BM25-M", 0.5011)}


def groups_of(name: str) -> tuple[str, str]:
    """The two groups a dataset is normalized in: its domain and its task format."""
    info = dataset_info(name)
    return info.domain, info.task


def scale(group: str, name: str) -> tuple[float, float]:
    """The published (min, max) of a dataset within a group."""
    try:
        return STATS[group][scored_as(name)]
    except KeyError:
        raise UnknownDatasetError(f"no published scale for {name!r} in group {group!r}") from None
