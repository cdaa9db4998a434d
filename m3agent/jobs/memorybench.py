"""``m3agent bench memorybench``: feed each memory system by a driver, answer the test set, score, report.

Each system keeps its memory in ``OUT/memories/<system>.db``. Every answered test case is one line of
``OUT/results.jsonl`` (fsynced when written), keyed by system, step and case, with the prediction, the raw
score, both normalized scores (within the dataset's domain and within its task format), the seconds it
took and any problem; every lived on-policy training case is kept in ``OUT/lived.jsonl``. A re-run skips
what is done: memory writes are idempotent on record ids, answered cases are not asked again. A
malformed record, an empty corpus or a judge reply without a grade is marked with its reason and the run
goes on. ``report.md`` and ``summary.json`` give, per system and step, the micro mean of normalized scores
per domain and per task format (the paper's headline), raw means per dataset, and memory and predict time.
``OUT`` is a run folder (:mod:`m3agent.files.outfolder`): it belongs to one record set, corpus and set of settings.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from m3agent.config import Config
from m3agent.errors import M3AgentError
from m3agent.eval.memorybench.datasets import (
    PUBLISHED_BEST,
    groups_of,
    scale,
    scored_as,
)
from m3agent.eval.memorybench.drivers import DRIVERS, RUNNERS, Harness, Lived
from m3agent.eval.memorybench.metrics import micro_mean, min_max
from m3agent.eval.memorybench.records import MBRecord
from m3agent.eval.memorybench.scoring import score_case
from m3agent.eval.memorybench.split import split_records
from m3agent.eval.memorybench.systems import MemorySystem, corpora_for, system_spec
from m3agent.factory import open_memory
from m3agent.files.outfolder import OPERATIONAL, claim, fingerprint, settings, write_text
from m3agent.files.private import private_dir
from m3agent.files.resumable import ResultsFile
from m3agent.models.embed.base import TextEmbedder
from m3agent.models.llm.base import ChatModel

RESULT_KEYS = ("id", "system", "driver", "step", "dataset", "test_idx", "prediction", "score", "metric",
               "normalized", "predict_seconds", "problem")
OWN_NAMES = frozenset({"results.jsonl", "lived.jsonl", "report.md", "summary.json", "memories"})


class MemoryBenchError(M3AgentError, ValueError):
    pass


@dataclass
class MemoryBenchSetup:
    out: Path
    config: Config
    embedder: Callable[[], TextEmbedder]
    chat: Callable[[], ChatModel]  # answers for the systems
    user: Callable[[], ChatModel]  # the LLM-as-user
    judge: Callable[[], ChatModel]  # judge-scored metrics
    corpus_dir: Path | None = None
    data: str = ""  # fingerprint of the records read (those run may be a part); "": the records run
    progress: Callable[[int], None] = lambda n: None
    notice: Callable[[str], None] = lambda text: None
    _models: dict = field(default_factory=dict)

    def model(self, name: str):
        """Built on first use: a run whose cases need no judge never loads one."""
        if name not in self._models:
            self._models[name] = getattr(self, name)()
        return self._models[name]


def run_identity(records: Sequence[MBRecord], setup: MemoryBenchSetup) -> dict:
    """What a run folder's results and memories depend on: the records (--datasets takes a part), the corpora,
    the models and sizes of bench.memorybench (not which systems: each has its own results) and the embedder."""
    return {"records": setup.data or fingerprint(list(records)),
            "corpus": str(setup.corpus_dir.resolve()) if setup.corpus_dir else None,
            **settings(setup.config.bench.memorybench, "bench.memorybench", OPERATIONAL | {"systems"}),
            **settings(setup.config.embedder, "embedder")}


def _results(out: Path) -> ResultsFile:
    return ResultsFile(out / "results.jsonl", RESULT_KEYS, "m3agent bench memorybench", MemoryBenchError)


def older_run(out: Path) -> bool:
    """A folder bench memorybench wrote before run folders were marked: only its names, its results ours."""
    names = set(os.listdir(out))
    if "results.jsonl" not in names or not names <= OWN_NAMES:
        return False
    _results(out).load()
    return True


# ------------------------------------------------------------------ a run as the command asks for it
def select_records(data: str | None, datasets: str | None = None) -> tuple[Path, list[MBRecord], str]:
    """The records a run reads from ``data`` (else ``$MEMORY_BENCH_PATH``): JSON lines, JSON, Parquet or the
    published dataset folder; with ``datasets`` (comma-separated names) only theirs, malformed records kept to be
    reported. Returns the data's path, the records and the fingerprint of all records read: the run folder
    belongs to all of them."""
    from m3agent.config import ConfigError
    from m3agent.eval.memorybench.records import load_records

    data = data or os.environ.get("MEMORY_BENCH_PATH")
    if not data:
        raise ConfigError("give --data PATH (or set MEMORY_BENCH_PATH): MemoryBench records, JSON lines or the "
                          "published dataset folder")
    records = load_records(data)
    whole = fingerprint(records)
    if datasets:
        wanted = {d.strip() for d in datasets.split(",")}
        records = [r for r in records if r.dataset in wanted or r.problem]
    return Path(data), records, whole


def memorybench_setup(data: Path, out: str | Path, config: Config, records: str = "", *, systems: str | None = None,
                      progress: Callable[[int], None] | None = None,
                      notice: Callable[[str], None] | None = None) -> MemoryBenchSetup:
    """The run's :class:`MemoryBenchSetup`: the models ``bench.memorybench`` names (``systems`` overrides its
    systems), built on first need; the corpora from ``corpus/`` beside or inside ``data``."""
    from m3agent import factory

    if systems:
        config = replace(config, bench=replace(config.bench, memorybench=replace(config.bench.memorybench,
                                                                                 systems=systems)))
    corpus = (data if data.is_dir() else data.parent) / "corpus"
    mb = config.bench.memorybench
    extra = {k: v for k, v in (("progress", progress), ("notice", notice)) if v is not None}
    return MemoryBenchSetup(out=Path(out), config=config, embedder=lambda: factory.build_embedder(config.embedder),
                            chat=lambda: factory.build_chat(mb.answer), user=lambda: factory.build_chat(mb.user),
                            judge=lambda: factory.build_chat(mb.judge), corpus_dir=corpus if corpus.is_dir() else None,
                            data=records, **extra)


def run_context(setup: MemoryBenchSetup, command: str) -> dict[str, str]:
    """What produced the numbers, written at the top of the report: ``command``, the systems and the models, the
    machine and the date."""
    import datetime

    from m3agent.jobs.machine import describe as describe_machine

    mb = setup.config.bench.memorybench
    return {"command": command, "systems": mb.systems,
            "answer model": f"{mb.answer.backend} {mb.answer.model}".strip(),
            "user model": f"{mb.user.backend} {mb.user.model}".strip(),
            "judge model": f"{mb.judge.backend} {mb.judge.model}".strip(),
            "machine": describe_machine(), "date": datetime.date.today().isoformat()}


def run_memorybench(records: Sequence[MBRecord], driver: str, setup: MemoryBenchSetup,
                    context: dict | None = None) -> dict:
    if driver not in DRIVERS:
        raise MemoryBenchError(f"unknown driver {driver!r}; one of {', '.join(DRIVERS)}")
    cfg = setup.config.bench.memorybench
    systems = [system_spec(s.strip()) for s in cfg.systems.split(",") if s.strip()]
    if not systems:
        raise MemoryBenchError("bench.memorybench.systems names no system")
    problems = [{"id": r.key, "problem": r.problem} for r in records if r.problem]
    for item in problems:
        setup.notice(f"record {item['id']} skipped: {item['problem']}")
    splits = split_records(records)
    train = [r for s in splits.values() for r in s.train]
    test = [r for s in splits.values() for r in s.test]
    if not test:
        raise MemoryBenchError("no usable test case: every record is malformed, or the data is empty")
    claim(setup.out, "bench memorybench", run_identity(records, setup), older=older_run)
    corpora = corpora_for(train + test, setup.corpus_dir, setup.notice)
    results = _results(setup.out)
    done = results.load()
    lived_file = ResultsFile(setup.out / "lived.jsonl", ("id", "dialog", "reactions", "lessons", "error"),
                             "m3agent bench memorybench", MemoryBenchError)
    lived = lived_file.load()
    timings: dict[str, list[float]] = {}
    with results.appender() as sink, lived_file.appender() as lived_sink:
        for spec in systems:
            db = setup.out / "memories" / f"{spec.name}-{driver}.db"
            private_dir(db.parent)
            graph = open_memory(db, setup.config, embedder=setup.model("embedder"), create=True)
            system = MemorySystem(spec, graph, top_k=cfg.top_k, lessons=cfg.lessons, max_tokens=cfg.max_tokens)
            try:
                def evaluate(step: str, system=system, spec=spec) -> None:
                    for record in test:
                        key = f"{spec.name}|{driver}|{step}|{record.key}"
                        if key in done and done[key].get("problem") is None:
                            setup.progress(1)
                            continue
                        done[key] = row = answer_case(system, record, setup, key, driver, step)
                        sink.write(row)
                        setup.progress(1)

                def keep(key: str, item: Lived, spec=spec) -> None:
                    lived_sink.write({"id": f"{spec.name}|{driver}|{key}", **item.to_dict()})

                def reuse(key: str, spec=spec) -> Lived | None:
                    row = lived.get(f"{spec.name}|{driver}|{key}")
                    if row is None or row.get("error"):
                        return None
                    return Lived(row["dialog"], row["reactions"], row["lessons"])

                harness = Harness(system, setup.model("chat"), _maybe(setup, "user"), _maybe(setup, "judge"),
                                  evaluate, reuse, keep, cfg.seed, cfg.max_rounds, cfg.batch, cfg.steps)
                RUNNERS[driver](harness, train, corpora)
                timings[spec.name] = harness.memory_seconds
            finally:
                system.close()
    previous = _previous_memory_seconds(setup.out / "summary.json", driver)
    for name in list(timings):
        if not timings[name] and name in previous:  # a re-run learned nothing new: keep what was measured
            timings[name] = previous[name]
    rows = [r for r in results.load().values() if r["driver"] == driver]
    summary = summarize(rows, systems=[s.name for s in systems], memory_seconds=timings, problems=problems,
                        sizes={name: (len(s.train), len(s.test)) for name, s in splits.items()})
    summary["driver"] = driver
    summary["context"] = context or {}
    write_text(setup.out / "summary.json", json.dumps(summary, indent=1, ensure_ascii=False))
    write_text(setup.out / "report.md", markdown(summary))
    return summary


def _previous_memory_seconds(path: Path, driver: str) -> dict[str, list[float]]:
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if old.get("driver") != driver:
        return {}
    return {name: [entry["memory_seconds_per_case"]] for name, entry in old.get("systems", {}).items()
            if entry.get("memory_seconds_per_case") is not None}


def _maybe(setup: MemoryBenchSetup, name: str):
    """A model that is loaded only when a case needs it."""
    return _Lazy(lambda: setup.model(name))


class _Lazy:
    def __init__(self, build):
        self._build = build

    def chat(self, *args, **kwargs):
        return self._build().chat(*args, **kwargs)


def answer_case(system: MemorySystem, record: MBRecord, setup: MemoryBenchSetup, key: str, driver: str,
                step: str) -> dict:
    row = {"id": key, "system": system.spec.name, "driver": driver, "step": step, "dataset": scored_as(record.dataset),
           "test_idx": record.test_idx, "prediction": None, "score": None, "metric": None, "normalized": None,
           "predict_seconds": None, "problem": None}
    started = time.perf_counter()
    try:
        prediction, _ = system.answer(record, setup.model("chat"))
    except M3AgentError as exc:
        row["problem"] = f"answer: {exc}"
        return row
    row["predict_seconds"] = round(time.perf_counter() - started, 4)
    row["prediction"] = prediction
    score = score_case(record, prediction, _maybe(setup, "judge"))
    row["metric"], row["score"] = score.metric, score.value
    if score.problem:
        row["problem"] = f"judge: {score.problem}"
    value = score.value if score.value is not None else None
    row["normalized"] = {group: (None if value is None else round(min_max(value, *scale(group, record.dataset)), 6))
                         for group in groups_of(record.dataset)}
    return row


def summarize(rows: Sequence[dict], *, systems: Sequence[str], memory_seconds: dict[str, list[float]],
              problems: Sequence[dict], sizes: dict[str, tuple[int, int]]) -> dict:
    """Per system and step: micro means of normalized scores per domain and per task format, raw means per
    dataset, memory and predict seconds. A case with no score counts as the dataset's minimum (0)."""
    table: dict[str, dict] = {}
    for name in systems:
        mine = [r for r in rows if r["system"] == name]
        steps: dict[str, dict] = {}
        for step in dict.fromkeys(r["step"] for r in mine):
            cases = [r for r in mine if r["step"] == step]
            groups: dict[str, list[float]] = {}
            raw: dict[str, list[float]] = {}
            for r in cases:
                domain, task = groups_of(r["dataset"])
                norm = r.get("normalized") or {}
                groups.setdefault(domain, []).append(norm.get(domain) or 0.0)
                groups.setdefault(task, []).append(norm.get(task) or 0.0)
                if r["score"] is not None:
                    raw.setdefault(r["dataset"], []).append(r["score"])
            predict = [r["predict_seconds"] for r in cases if r.get("predict_seconds") is not None]
            steps[step] = {"cases": len(cases),
                           "normalized": {g: round(micro_mean(v), 4) for g, v in sorted(groups.items())},
                           "raw": {d: round(micro_mean(v), 4) for d, v in sorted(raw.items())},
                           "predict_seconds_p50": round(statistics.median(predict), 4) if predict else None,
                           "problems": sum(1 for r in cases if r.get("problem"))}
        spent = memory_seconds.get(name, [])
        table[name] = {"steps": steps, "memory_seconds_per_case": round(statistics.mean(spent), 4) if spent else None}
    return {"systems": table, "malformed_records": list(problems), "split": {k: list(v) for k, v in sizes.items()},
            "problems": [{"id": r["id"], "problem": r["problem"]} for r in rows if r.get("problem")]}


def markdown(summary: dict) -> str:
    groups = sorted({g for s in summary["systems"].values() for st in s["steps"].values() for g in st["normalized"]})
    lines = [f"# MemoryBench ({summary.get('driver')})", ""]
    for key, value in (summary.get("context") or {}).items():
        lines.append(f"- {key}: {value}")
    lines += ["", "Micro mean of min-max normalized scores (published per-dataset scales); a case without a score "
              "counts as 0.", "", "| system | step | cases | " + " | ".join(groups)
              + " | predict s (p50) | memory s / case | problems |", "|---|---|---|" + "---|" * len(groups) + "---|---|---|"]
    for name, entry in summary["systems"].items():
        for step, st in entry["steps"].items():
            cells = " | ".join(f"{st['normalized'][g]:.4f}" if g in st["normalized"] else "" for g in groups)
            mem = entry["memory_seconds_per_case"]
            lines.append(f"| {name} | {step} | {st['cases']} | {cells} | {st['predict_seconds_p50']} | "
                         f"{'' if mem is None else mem} | {st['problems']} |")
    lines += ["", "Best published off-policy micro means (Qwen3-8B): "
              + ", ".join(f"{g} {n} {v:.4f}" for g, (n, v) in PUBLISHED_BEST.items()) + ".", ""]
    if summary["malformed_records"] or summary["problems"]:
        lines += ["## Problems", ""]
        lines += [f"- {p['id']}: {p['problem']}" for p in summary["malformed_records"] + summary["problems"][:50]]
    return "\n".join(lines) + "\n"
