"""``m3agent bench m3 --feedback``: a simulated user's feedback on each answer, kept as procedural memory of
the video, and what it does for the questions asked later.

Two passes over the same questions. **Without**: the plain benchmark (no lessons shown), in ``OUT/without``.
**With**: each video's questions in the order they are asked (``before_clip``, then id), one at a time,
on a working copy of its memory (``OUT/with/memories``; the original is never written): the answer is
judged, the simulated user reacts on the metric path (the verdict gives the fixed like or dislike text;
actions from the action model; with a wrong answer, a correction carrying the reference answer with the
action model's dislike probability, or ``bench.feedback_correction``), and the lesson drawn
(:func:`m3agent.eval.feedback.lesson_text`) is stored as a procedural line at the question's clip, so
later questions see it (``control.lessons``). The comparison (``OUT/feedback.md``, ``feedback.json``):
accuracy on the later questions (all but each video's first) and on the second half of each video's
questions (the first half only gives feedback), with and without that memory. **Asked again**: then every question
is asked once more at its own clip, with every lesson of the "with" pass in memory (``OUT/again``), as a user
returns to what they asked and corrected; its "without" is the plain pass, which is what a memory without feedback
answers again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from m3agent.errors import M3AgentError
from m3agent.eval.annotations import BenchItem, timed
from m3agent.eval.feedback import lesson_text
from m3agent.eval.judge import choice_prompt
from m3agent.eval.memorybench.simulator import (
    DEFAULT_ACTIONS,
    DISLIKE_TEXT,
    DISSATISFIED,
    LIKE_TEXT,
    SATISFIED,
    case_rng,
)
from m3agent.eval.report import is_correct
from m3agent.files.outfolder import claim, write_text
from m3agent.files.private import private_dir
from m3agent.files.resumable import ResultsFile
from m3agent.jobs.m3bench import (
    BenchSetup,
    _answer_fields,
    _base,
    _failed,
    _judge_and_write,
    _Writer,
    older_run,
    ready_memory,
    run_bench,
    run_identity,
)

FEEDBACK_SEED = 42
OWN_NAMES = frozenset({"without", "with", "again", "feedback.json", "feedback.md"})


def asking_order(items: Sequence[BenchItem]) -> dict[str, list[BenchItem]]:
    """Each video's questions in the order a user asks them: by ``before_clip`` (unknown last), then id."""
    by_video: dict[str, list[BenchItem]] = {}
    for item in items:
        by_video.setdefault(item.video, []).append(item)
    return {video: sorted(group, key=lambda i: (i.before_clip is None, i.before_clip or 0, i.id))
            for video, group in by_video.items()}


def react(item: BenchItem, record: dict, correction_rate: float | None) -> dict:
    """The simulated user's reaction to a judged answer (metric path), drawn from the question's own seed."""
    right = is_correct(record)
    satisfaction = SATISFIED if right else DISSATISFIED
    rng = case_rng(FEEDBACK_SEED, item.id, 1)
    actions = DEFAULT_ACTIONS.act(satisfaction, False, rng)
    p_correct = 0.0 if right else (DEFAULT_ACTIONS.p_dislike(satisfaction) if correction_rate is None
                                   else correction_rate)
    corrected = bool(rng.random() < p_correct) and item.reference is not None
    reply = LIKE_TEXT if right else DISLIKE_TEXT
    lesson = lesson_text(item.question, record.get("answer") or "", satisfaction=satisfaction, actions=actions,
                         reply=reply, correction=str(item.reference) if corrected else None)
    return {"right": right, "satisfaction": satisfaction, "actions": list(actions), "reply": reply,
            "corrected": corrected, "lesson": lesson}


def working_copy(source: Path, target: Path) -> Path:
    """A copy of a memory DB this run may write lessons into (made once; later runs resume on it)."""
    if target.exists():
        return target
    private_dir(target.parent)
    tmp = target.with_name(target.name + ".tmp")
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src, sqlite3.connect(tmp) as dst:
        src.backup(dst)
    shutil.move(tmp, target)
    return target


def run_with_feedback(items: Sequence[BenchItem], setup: BenchSetup, correction_rate: float | None, *,
                      again: bool = False) -> list[dict]:
    """The "with" pass (each answer judged and its lesson stored before the next question), or with ``again`` the
    "asked again" pass over the lessons it left (all of a video's questions at once, nothing stored); returns its
    records in asking order."""
    from m3agent.control import Question

    out = setup.out / ("again" if again else "with")
    private_dir(out)
    results = ResultsFile(out / "results.jsonl", {"id", "video", "question", "verdict"}, "m3agent bench --feedback")
    done = results.load()
    finished = (lambda r: r is not None and "stage" not in r) if again else (lambda r: bool((r or {}).get("feedback")))
    order = asking_order(items)
    with results.appender() as sink:
        writer = _Writer(sink, setup.progress)
        for video, group in order.items():
            todo = [i for i in group if not finished(done.get(i.id))]
            if not todo:
                continue
            if setup.progress:
                setup.progress(len(group) - len(todo))
            plan = ready_memory(video, todo, setup, writer)
            if plan is None:
                continue
            db = working_copy(plan.db, setup.out / "with" / "memories" / plan.db.name)
            with setup.open_memory(db) as graph:
                videos = graph.videos()
                stored = videos[0] if len(videos) == 1 else graph.resolve_video(plan.video)
                video_id = stored.id
                todo = asking_order([timed(i, stored.clip_seconds) for i in todo])[video]  # in the memory's clips
                last_clip = graph.clips(video_id)[-1].id if graph.clips(video_id) else 0
                controller = setup.controller(graph)
                for item in todo:
                    if item.problem:
                        writer.write(_failed(item, "annotation", item.problem))
                ask = [i for i in todo if not i.problem]
                for batch in [ask] if again else [[i] for i in ask]:
                    answers = controller.answer_many([Question(choice_prompt(i) if i.multiple_choice else i.question,
                                                               i.before_clip, video_id) for i in batch])
                    pairs = [(i, {**_base(i), **_answer_fields(a, choice=i.multiple_choice), "verdict": None})
                             for i, a in zip(batch, answers)]
                    for record in (r for _, r in pairs if r["error"]):
                        writer.write({**record, "stage": "answer"})
                    judged: list[dict] = []
                    _judge_and_write([(i, r) for i, r in pairs if not r["error"]], setup, _Collect(judged))
                    if again:
                        for record in judged:
                            writer.write(record)
                        continue
                    if not judged:
                        continue
                    item, record = batch[0], judged[0]
                    feedback = react(item, record, correction_rate)
                    if feedback["lesson"]:
                        clip = item.before_clip if item.before_clip is not None else last_clip
                        graph.remember_lesson(video_id, min(clip, last_clip), feedback["lesson"], {"record": item.id})
                    writer.write({**record, "feedback": feedback})
    final = results.load()
    return [final[i.id] for group in order.values() for i in group if i.id in final]


class _Collect:
    """Keeps what :func:`_judge_and_write` would write, so the feedback can join it first."""

    def __init__(self, into: list[dict]):
        self.into = into

    def write(self, record: dict, finished: bool = True) -> None:
        self.into.append(record)


def compare(items: Sequence[BenchItem], without: dict[str, dict], with_: dict[str, dict],
            again: dict[str, dict] | None = None) -> dict:
    """Accuracy with and without feedback memory on the later questions and on each video's second half, in the
    order the "with" pass asked them (its records carry ``before_clip`` in the clips of each video's memory), and
    on every question asked again (``again``: that pass's records)."""
    asked = [dataclasses.replace(i, before_clip=with_[i.id]["before_clip"]) if "before_clip" in with_.get(i.id, {})
             else i for i in items]
    later, second = [], []
    for group in asking_order(asked).values():
        later += [i.id for i in group[1:]]
        second += [i.id for i in group[len(group) // 2:]]

    def accuracy(ids, records):
        return {"questions": len(ids), "correct": sum(is_correct(records.get(i, {})) for i in ids),
                "accuracy": round(sum(is_correct(records.get(i, {})) for i in ids) / len(ids), 4) if ids else None}

    everyone = [i.id for group in asking_order(asked).values() for i in group]
    return {"later questions": {"without": accuracy(later, without), "with": accuracy(later, with_)},
            "second half": {"without": accuracy(second, without), "with": accuracy(second, with_)},
            **({"asked again": {"without": accuracy(everyone, without), "with": accuracy(everyone, again)}}
               if again is not None else {}),
            "lessons stored": sum(1 for r in with_.values() if (r.get("feedback") or {}).get("lesson")),
            "corrections": sum(1 for r in with_.values() if (r.get("feedback") or {}).get("corrected"))}


def run_feedback_bench(items: Sequence[BenchItem], setup: BenchSetup, *, benchmark: str, context: dict | None = None,
                       correction_rate: float | None = None) -> dict:
    if correction_rate is not None and not 0 <= correction_rate <= 1:
        raise M3AgentError(f"the correction rate must be within 0 and 1 (got {correction_rate})")
    claim(setup.out, "bench m3 --feedback", {**run_identity(items, setup), "correction rate": correction_rate},
          older=_older_feedback_run)
    plain = dataclasses.replace(setup.config, control=dataclasses.replace(setup.config.control, lessons=0))
    run_bench(items, dataclasses.replace(setup, out=setup.out / "without", config=plain, _built=setup._built),
              benchmark=benchmark + " (without feedback)", context=context)
    without = {r["id"]: r for r in ResultsFile(setup.out / "without" / "results.jsonl", {"id"}, "m3agent bench").load().values()}
    with_ = {r["id"]: r for r in run_with_feedback(items, setup, correction_rate)}
    again = {r["id"]: r for r in run_with_feedback(items, setup, correction_rate, again=True)}
    summary = {"benchmark": benchmark, "correction_rate": "the action model's" if correction_rate is None
               else correction_rate, **compare(items, without, with_, again), "context": context or {}}
    write_text(setup.out / "feedback.json", json.dumps(summary, indent=1, ensure_ascii=False))
    write_text(setup.out / "feedback.md", feedback_markdown(summary))
    return summary


def _older_feedback_run(out: Path) -> bool:
    """A folder ``--feedback`` wrote before run folders were marked: only its names, its plain run's ours."""
    names = set(os.listdir(out))
    return "without" in names and names <= OWN_NAMES and older_run(out / "without")


def feedback_markdown(summary: dict) -> str:
    lines = [f"# Feedback on video memory: {summary['benchmark']}", ""]
    for key, value in summary.get("context", {}).items():
        lines.append(f"- {key}: {value}")
    lines += ["", f"Corrections drawn with {summary['correction_rate']} probability; "
              f"{summary['lessons stored']} lessons stored, {summary['corrections']} corrections.", "",
              "| questions | without feedback memory | with it |", "|---|---|---|"]
    for part in ("later questions", "second half", "asked again"):
        if part not in summary:
            continue
        a, b = summary[part]["without"], summary[part]["with"]
        lines.append(f"| {part} ({a['questions']}) | {a['correct']}/{a['questions']} = {a['accuracy']} | "
                     f"{b['correct']}/{b['questions']} = {b['accuracy']} |")
    return "\n".join(lines) + "\n"
