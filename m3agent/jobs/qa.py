"""Batch question answering over a memory DB: questions from JSON lines in, answers as JSON lines out.

Input lines are ``{"question": ..., "id"|"question_id": ..., "before_clip": N, "video": name}`` (only
``question`` is required; other keys are carried into the output) or plain text. Output is written as
each group of questions finishes, so an interrupted run resumes where it stopped: questions already
answered are skipped, failed ones are asked again, and a half-written last line is dropped.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from m3agent.config import ControlConfig
from m3agent.control import Controller, Question
from m3agent.errors import M3AgentError


class QuestionFileError(M3AgentError, ValueError):
    """A questions file that cannot be read as questions (the message names the line)."""


@dataclass
class QAItem:
    id: str
    question: Question
    extra: dict = field(default_factory=dict)


@dataclass
class QAReport:
    total: int
    skipped: int  # answered by an earlier run
    answered: int
    failed: int
    seconds: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)

    def summary(self) -> str:
        timing = ""
        if self.seconds:
            timing = (f"; median {statistics.median(self.seconds):.1f} s and "
                      f"{statistics.mean(self.rounds):.1f} model rounds per question")
        return (f"{self.answered} answered, {self.failed} failed, {self.skipped} already done "
                f"of {self.total}{timing}")


def read_questions(path: str | Path) -> list[QAItem]:
    items: list[QAItem] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("{"):
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise QuestionFileError(f"{path}:{number}: not valid JSON: {exc}") from exc
            else:
                record = {"question": line}
            text = record.pop("question", None)
            if not isinstance(text, str) or not text.strip():
                raise QuestionFileError(f"{path}:{number}: no \"question\" text")
            qid = str(record.pop("id", record.pop("question_id", f"q{number}")))
            if qid in seen:
                raise QuestionFileError(f"{path}:{number}: duplicate id {qid!r}")
            seen.add(qid)
            before = record.pop("before_clip", None)
            try:
                before = None if before is None else int(before)
            except (TypeError, ValueError) as exc:
                raise QuestionFileError(f"{path}:{number}: before_clip must be a clip number") from exc
            items.append(QAItem(qid, Question(text.strip(), before, record.pop("video", None)), record))
    return items


def load_answers(path: str | Path) -> dict[str, dict]:
    """The answers an earlier run wrote (without failures or a torn last line), rewritten in place."""
    path = Path(path)
    if not path.exists():
        return {}
    done: dict[str, dict] = {}
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            try:
                record = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "id" in record and not record.get("error"):
                done[str(record["id"])] = record
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for record in done.values():
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return done


def run_qa(controller: Controller, items: list[QAItem], out_path: str | Path, config: ControlConfig,
           on_done: Callable[[int], None] | None = None) -> QAReport:
    done = load_answers(out_path)
    todo = [item for item in items if item.id not in done]
    report = QAReport(total=len(items), skipped=len(items) - len(todo), answered=0, failed=0)
    size = max(1, config.batch_size)
    with open(out_path, "a", encoding="utf-8") as out:
        for start in range(0, len(todo), size):
            group = todo[start:start + size]
            answers = controller.answer_many([item.question for item in group])
            for item, answer in zip(group, answers):
                record = {**item.extra, "id": item.id, "question": item.question.text,
                          "before_clip": item.question.before_clip, "video": item.question.video,
                          **answer.to_dict()}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                if answer.error:
                    report.failed += 1
                else:
                    report.answered += 1
                    report.seconds.append(answer.seconds)
                    report.rounds.append(sum(1 for r in answer.rounds if r.by == "model"))
            out.flush()
            os.fsync(out.fileno())
            if on_done:
                on_done(len(group))
    return report
