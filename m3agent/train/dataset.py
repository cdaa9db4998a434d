"""Training tasks as the Parquet rows verl's RL dataset reads: control questions and memory-build streams.

Control: M3-Bench-format annotations plus a folder of memory DBs; each question becomes one row::

    data_source   "m3-bench/robot" (the annotation file's stem)
    prompt        the control env's first messages (system + round 1), exactly what the policy reads
    ability       "video-memory-qa"
    reward_model  {"style": "rule", "ground_truth": the reference answer}
    agent_name    "m3agent_control" (the agent loop of pipelines/train/agent_loop.py)
    extra_info    {index, split, question_id, question, video (its name in the DB), memory (the DB's
                   absolute path), before_clip, types, tools_kwargs: {memory_search: {create_kwargs}}}

A question whose video has no memory DB, whose memory holds no clip it may see, or whose annotation is
unusable is skipped, and counted under its reason. Videos, not questions, are split between train and
validation (seeded), so no validation question is about a video seen in training.

Memory-build: tasks ``{"id", "chunks": [records or strings], "questions": [{"question", "answer"}]}`` (a
JSON-lines file, or :func:`memorybench_tasks` from MemoryBench's corpus datasets); each task becomes one row::

    prompt        the memory-build env's first messages (system + chunk 1)
    ability       "memory-construction"
    reward_model  {"style": "rule", "ground_truth": ""} (the env scores the held-out questions itself)
    agent_name    "m3agent_memory_build"
    extra_info    {index, split, env: "memory-build", task_id, task: the task as JSON text}

Tasks are split between train and validation (seeded); one the env refuses is skipped and counted.

``--out`` is a run folder of train-data (:mod:`m3agent.files.outfolder`), claimed before any memory or model is
opened: someone else's folder is refused untouched. Each run writes the whole set again, so a re-run with
other inputs replaces its own earlier set (nothing of it is reused, nothing of it is left behind).
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from m3agent.config import Config
from m3agent.envs.base import Env, EnvError
from m3agent.errors import M3AgentError
from m3agent.eval.annotations import BenchItem, timed
from m3agent.eval.memories import plan_memory
from m3agent.files.jsonl import read_json_lines
from m3agent.files.outfolder import claim, replacing, write_text
from m3agent.train.tasks import (
    AGENT_NAME,
    MEMORY_BUILD_AGENT,
    TOOL_NAME,
    MemoryShelf,
    task_of,
    video_in,
)

COMMAND = "train-data"
ABILITY = "video-memory-qa"
MEMORY_BUILD_ABILITY = "memory-construction"


class TrainDataError(M3AgentError, ValueError):
    """A task file that cannot be read (the message names the file and line)."""


@dataclass
class Conversion:
    train: list[dict] = field(default_factory=list)
    val: list[dict] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> questions
    problems: list[dict] = field(default_factory=list)  # {video or task, reason}: one per thing skipped
    group: ClassVar[str] = "videos"  # what the summary counts beside the rows of each split

    def count(self, rows: list[dict]) -> int:
        return len({r["extra_info"]["video_key"] for r in rows})

    def summary(self) -> dict:
        group = self.group
        return {"train": len(self.train), "val": len(self.val), f"train_{group}": self.count(self.train),
                f"val_{group}": self.count(self.val), "skipped": dict(self.skipped),
                "skipped_total": sum(self.skipped.values()), "problems": self.problems}


class TaskConversion(Conversion):
    """Memory-build rows: one per task, the summary counting their held-out questions."""

    group: ClassVar[str] = "questions"

    def count(self, rows: list[dict]) -> int:
        return sum(len(json.loads(r["extra_info"]["task"])["questions"]) for r in rows)


def split_videos(videos: Sequence[str], val_fraction: float, seed: int) -> set[str]:
    """The videos held out for validation: a seeded share, at least one when there are two or more."""
    ordered = sorted(set(videos))
    count = math.ceil(len(ordered) * val_fraction) if val_fraction > 0 else 0
    if len(ordered) > 1:
        count = min(max(count, 1 if val_fraction > 0 else 0), len(ordered) - 1)
    else:
        count = 0  # a single video goes to training
    random.Random(seed).shuffle(ordered)
    return set(ordered[:count])


def convert(items: Sequence[BenchItem], memories: str | Path, config: Config, *, data_source: str,
            val_fraction: float | None = None, seed: int | None = None) -> Conversion:
    """Rows for ``items`` whose memory is in ``memories`` (``VIDEO.db``, see :mod:`m3agent.eval.memories`); each
    question's ``before_clip`` counted in the clips its video's memory was cut into."""
    from m3agent.factory import build_env

    val_fraction = config.train.val_fraction if val_fraction is None else val_fraction
    seed = config.train.seed if seed is None else seed
    out = Conversion()
    by_video: dict[str, list[BenchItem]] = {}
    for item in items:
        by_video.setdefault(item.video, []).append(item)
    shelf = MemoryShelf(config)
    ready: dict[str, list[dict]] = {}
    try:
        for video, group in by_video.items():
            db, video_name, problem = _memory_of(video, group[0], memories, shelf)
            if problem:
                out.skipped[problem[0]] += len(group)
                out.problems.append({"video": video, "reason": problem[1]})
                continue
            graph = shelf.get(db)
            env = build_env(config, "control", memory=graph, rewarder=None)  # prompts only: no judge
            clip_seconds = graph.resolve_video(video_name).clip_seconds  # what the memory's clips are, not the config
            for item in (timed(i, clip_seconds) for i in group):
                reason = _unusable(item)
                row = None if reason else _row(item, env, db, video_name, data_source, out)
                if reason:
                    out.skipped[reason] += 1
                if row is not None:
                    ready.setdefault(video, []).append(row)
    finally:
        shelf.close()
    _split(out, ready, val_fraction, seed)
    return out


def _split(out: Conversion, ready: dict[str, list[dict]], val_fraction: float, seed: int) -> None:
    """Rows into ``out.train``/``out.val`` by their group (a video, a task), a seeded share held out; each
    split's rows numbered from 0."""
    held_out = split_videos(list(ready), val_fraction, seed)
    for key in sorted(ready):
        split = "val" if key in held_out else "train"
        for row in ready[key]:
            row["extra_info"]["split"] = split
            getattr(out, split).append(row)
    for split in (out.train, out.val):
        for index, row in enumerate(split):
            row["extra_info"]["index"] = index


def _memory_of(video: str, first: BenchItem, memories: str | Path,
               shelf: MemoryShelf) -> tuple[Path | None, str, tuple[str, str] | None]:
    """The video's DB and its name there, or ``(reason, detail)`` when it cannot be used."""
    plan = plan_memory(video, memories, Path(memories) / "converted", mem_path=first.mem_path,
                       video_path=first.video_path)
    if not plan.found:
        return None, "", ("no memory", plan.problem)
    if plan.pickle is not None:
        return None, "", ("M3-Agent pickle not converted",
                          f"{plan.pickle} is M3-Agent's graph: convert it first (m3agent import-m3 {plan.pickle} "
                          f"{Path(memories) / (video + '.db')})")
    try:
        return plan.db, video_in(shelf.get(plan.db), video, first.video_path), None
    except M3AgentError as exc:
        return None, "", ("unusable memory", f"{plan.db}: {exc}")


def _unusable(item: BenchItem) -> str:
    if item.problem:
        return "bad annotation"
    if item.multiple_choice:
        return "multiple choice (scored by letter, not a control task)"
    return ""


def _row(item: BenchItem, env: Env, db: Path, video: str, data_source: str, out: Conversion) -> dict | None:
    """One row, its prompt the env's first observation; None (counted) when the env refuses the question."""
    extra = {"index": 0, "split": "", "question_id": item.id, "question": item.question, "video": video,
             "video_key": item.video, "memory": str(Path(db).resolve()), "before_clip": item.before_clip,
             "types": list(item.types)}
    try:
        prompt = env.reset(task_of(extra, item.reference))
    except M3AgentError as exc:
        out.skipped["memory cannot answer it"] += 1
        out.problems.append({"video": item.video, "question_id": item.id, "reason": str(exc)})
        return None
    search = {key: extra[key] for key in ("memory", "video", "before_clip", "question")}
    extra["tools_kwargs"] = {TOOL_NAME: {"create_kwargs": search}}
    return {"data_source": data_source, "prompt": prompt, "ability": ABILITY,
            "reward_model": {"style": "rule", "ground_truth": item.reference}, "agent_name": AGENT_NAME,
            "extra_info": extra}


def write_parquet(rows: list[dict], path: str | Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), str(path))


def build_dataset(annotations: str | Path, memories: str | Path, out_dir: str | Path, config: Config, *,
                  val_fraction: float | None = None, seed: int | None = None) -> dict:
    """``OUT/train.parquet``, ``OUT/val.parquet`` (when any video is held out) and ``OUT/summary.json``."""
    from m3agent.eval.annotations import read_annotations

    items = read_annotations(annotations, clip_seconds=config.memorize.perception.clip_seconds)
    claim(out_dir, COMMAND)
    result = convert(items, memories, config, data_source=f"m3-bench/{Path(annotations).stem}",
                     val_fraction=val_fraction, seed=seed)
    return write_conversion(result, out_dir)


def write_conversion(result: Conversion, out_dir: str | Path) -> dict:
    """``OUT/train.parquet``, ``OUT/val.parquet`` (when anything is held out) and ``OUT/summary.json``, each
    replaced at once, in a folder :func:`claim` gave us."""
    out = Path(out_dir)
    summary = result.summary()
    for split in ("train", "val"):
        rows, path = getattr(result, split), out / f"{split}.parquet"
        if rows:
            with replacing(path) as tmp:
                write_parquet(rows, tmp)
            summary[f"{split}_file"] = str(path)
        elif path.exists():
            path.unlink()  # a re-run with other data must not leave an old split behind
    write_text(out / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False))
    return summary


# ------------------------------------------------------------------------------------------------ memory-build
def read_tasks(path: str | Path) -> list[Any]:
    """The memory-build tasks of a JSON-lines file, one a line (blank lines skipped)."""
    return read_json_lines(path, error=TrainDataError, unreadable="cannot read the task file {source}: {reason}",
                           message="line {number} of {source} is not JSON ({msg})")


def convert_tasks(tasks: Sequence[Any], config: Config, *, data_source: str, val_fraction: float | None = None,
                  seed: int | None = None) -> TaskConversion:
    """One row per usable task, its prompt the memory-build env's first observation; split by task."""
    from m3agent.factory import build_env

    val_fraction = config.train.val_fraction if val_fraction is None else val_fraction
    seed = config.train.seed if seed is None else seed
    out = TaskConversion()
    ready: dict[str, list[dict]] = {}
    env = build_env(config, "memory-build", judge=None)  # prompts only: no judge
    try:
        for number, task in enumerate(tasks, start=1):
            task_id = str(task.get("id") or f"task-{number}") if isinstance(task, dict) else f"task-{number}"
            if task_id in ready:  # the split goes by id: two tasks under one id could fall on both sides
                out.skipped["repeated id"] += 1
                out.problems.append({"task": task_id, "reason": f"task {number} repeats the id {task_id!r}"})
                continue
            try:
                prompt = list(env.reset(task))
            except EnvError as exc:
                out.skipped["bad task"] += 1
                out.problems.append({"task": task_id, "reason": str(exc)})
                continue
            ready[task_id] = [_task_row({**task, "id": task_id}, prompt, data_source)]
    finally:
        env.close()
    _split(out, ready, val_fraction, seed)
    return out


def _task_row(task: dict, prompt: list[dict], data_source: str) -> dict:
    extra = {"index": 0, "split": "", "env": "memory-build", "task_id": task["id"],
             "task": json.dumps(task, ensure_ascii=False)}
    return {"data_source": data_source, "prompt": prompt, "ability": MEMORY_BUILD_ABILITY,
            "reward_model": {"style": "rule", "ground_truth": ""}, "agent_name": MEMORY_BUILD_AGENT,
            "extra_info": extra}


def build_task_dataset(tasks: Sequence[Any], out_dir: str | Path, config: Config, *, data_source: str,
                       val_fraction: float | None = None, seed: int | None = None) -> dict:
    """Memory-build rows of ``tasks`` written as :func:`write_conversion` writes them; the summary."""
    claim(out_dir, COMMAND)
    result = convert_tasks(tasks, config, data_source=data_source, val_fraction=val_fraction, seed=seed)
    return write_conversion(result, out_dir)


def bare_question(prompt: str) -> str:
    """The question of a MemoryBench corpus prompt (``... Question: Q Short answer:``), else the prompt: the
    policy is scored on what is asked, not on the benchmark's instructions around it."""
    _, found, question = prompt.rpartition("Question:")
    question = question if found else prompt
    return question.strip().removesuffix("Short answer:").strip()


def memorybench_tasks(data: str | Path, notice=lambda text: None) -> list[dict]:
    """One task per corpus conversation MemoryBench records ask about (Locomo, DialSim): its turns are the
    stream, the questions about it, with their reference answers, are held out. ``data`` is read as ``m3agent
    bench memorybench --data`` reads it, corpora from ``corpus/`` beside or inside it; ``notice`` hears of a
    conversation without its corpus."""
    from m3agent.eval.memorybench.datasets import UnknownDatasetError
    from m3agent.eval.memorybench.records import load_records
    from m3agent.eval.memorybench.systems import conversation_of, corpora_for

    root = Path(data)
    asked: dict[str, list[dict]] = {}
    about = []
    for record in load_records(root):
        try:
            conversation = None if record.problem else conversation_of(record)
        except UnknownDatasetError:
            conversation = None
        reference = record.reference()
        if conversation and reference not in (None, ""):
            asked.setdefault(conversation, []).append(
                {"id": record.key, "question": bare_question(record.question()), "answer": str(reference)})
            about.append(record)
    corpora = corpora_for(about, (root if root.is_dir() else root.parent) / "corpus", notice)
    keys = ("id", "text", "time", "speaker", "session")
    return [{"id": f"memorybench/{name}", "questions": asked[name],
             "chunks": [{k: turn[k] for k in keys if turn.get(k) not in (None, "")} for turn in corpora[name]]}
            for name in sorted(asked) if name in corpora]


# ------------------------------------------------------------------ the command: m3agent train-data
class TrainDataOptionsError(M3AgentError, ValueError):
    """Options of ``train-data`` that do not go together (the message says which are needed)."""


@dataclass(frozen=True)
class TrainDataRequest:
    """What ``m3agent train-data`` is asked for: its options, as given. Control rows need ``annotations`` and
    ``memories``; memory-build rows need ``tasks`` or ``memorybench`` (one of them)."""

    out: str
    task: str = "control"  # control | memory-build
    annotations: str | None = None  # control: M3-Bench JSON
    memories: str | None = None  # control: folder of memory DBs, VIDEO.db
    tasks: str | None = None  # memory-build: JSON lines of {id, chunks, questions}
    memorybench: str | None = None  # memory-build: MemoryBench records, one task per corpus conversation
    val_fraction: float | None = None
    seed: int | None = None


def check_request(request: TrainDataRequest) -> None:
    """Refuse options that do not fit (:class:`TrainDataOptionsError`), before any file is read."""
    if request.val_fraction is not None and not 0 <= request.val_fraction < 1:
        raise TrainDataOptionsError(f"--val-fraction must be in [0, 1) (got {request.val_fraction})")
    if request.task == "control":
        if not (request.annotations and request.memories) or request.tasks or request.memorybench:
            raise TrainDataOptionsError("--task control needs --annotations and --memories (--tasks and "
                                        "--memorybench are for --task memory-build)")
    elif bool(request.tasks) == bool(request.memorybench):
        raise TrainDataOptionsError("--task memory-build needs --tasks FILE or --memorybench DATA (one of them)")


def build_train_data(request: TrainDataRequest, config: Config, notice=lambda text: None) -> dict:
    """Check ``request``, then write its rows into ``request.out`` (:func:`build_dataset` or
    :func:`build_task_dataset`); returns the summary. ``notice`` hears of a conversation without its corpus."""
    check_request(request)
    split = {"val_fraction": request.val_fraction, "seed": request.seed}
    if request.task == "control":
        return build_dataset(request.annotations, request.memories, request.out, config, **split)
    source = Path(request.tasks or request.memorybench)
    tasks = read_tasks(source) if request.tasks else memorybench_tasks(source, notice=notice)
    kind = "memory-build" if request.tasks else "memorybench"
    return build_task_dataset(tasks, request.out, config, data_source=f"{kind}/{source.stem}", **split)
