"""Batch question answering over a memory DB: questions from JSON lines in, answers as JSON lines out.

Input lines are ``{"question": ..., "id"|"question_id": ..., "before_clip": N, "video": name}`` (only
``question`` is required; other keys are carried into the output, a ground-truth ``answer`` as
``reference``) or plain text, in UTF-8 (a BOM is
fine) or UTF-16 with a BOM. Each answer is written as soon as its question is done, so an interrupted
run (Ctrl-C, a crash) resumes where it stopped: questions already answered are skipped, failed ones
are asked again, and a half-written last line is dropped.

The answers file is only ever one this module wrote: every line a JSON object with ``id``, ``question``,
``answer`` and ``rounds`` (failures too), or an empty file. Anything else, the questions file above all,
is refused untouched, as is a file answering other questions under the same ids.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from m3agent.config import ControlConfig
from m3agent.control import Answer, Controller, Question
from m3agent.errors import M3AgentError
from m3agent.files.jsonl import LineError, file_lines, loads, too_long
from m3agent.files.resumable import Appender, ResultsFile, ResultsFileError
from m3agent.memory.search import QueryError


class QuestionFileError(M3AgentError, ValueError):
    """A questions file that cannot be read as questions (the message names the line)."""


class AnswersFileError(ResultsFileError):
    """An answers file qa must not write into: the questions file, or a file it did not write."""


class QAInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_qa`, raised after every finished answer is saved; ``report`` says how many."""

    def __init__(self, report: QAReport):
        super().__init__()
        self.report = report


#: keys every line :func:`run_qa` writes carries; a file with other lines is not ours to rewrite
ANSWER_KEYS = frozenset({"id", "question", "answer", "rounds"})


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


#: the longest line of a questions file (characters): a question is a sentence, a record a few fields
MAX_QUESTION_LINE = 1_000_000


def read_questions(path: str | Path) -> list[QAItem]:
    """The questions of a file read by the project's one reader (:mod:`m3agent.files.jsonl`: UTF-8 or UTF-16 with a
    BOM, bounded lines, text only); a line that is no question is an error naming it, before any model loads."""
    items: list[QAItem] = []
    seen: set[str] = set()
    lines = file_lines(path, error=QuestionFileError, unreadable="cannot read {source}: {reason}",
                       max_line=MAX_QUESTION_LINE)
    for number, raw in lines:
        if raw is None:
            raise QuestionFileError(f"{path}:{number}: {too_long(MAX_QUESTION_LINE)}")
        line = raw.strip()
        if line.startswith("{"):
            try:
                record = loads(line)
            except LineError as exc:
                raise QuestionFileError(f"{path}:{number}: not valid JSON: {exc.msg}") from exc
        else:
            record = {"question": line}
        if not isinstance(record, dict):
            raise QuestionFileError(f"{path}:{number}: not a question: give text or a JSON object")
        text = record.pop("question", None)
        if not isinstance(text, str) or not text.strip():
            raise QuestionFileError(f"{path}:{number}: no \"question\" text")
        qid = record.pop("id", record.pop("question_id", f"q{number}"))
        if isinstance(qid, bool) or not isinstance(qid, str | int):
            raise QuestionFileError(f"{path}:{number}: the id must be a string or a whole number (got {qid!r})")
        qid = str(qid)
        if qid in seen:
            raise QuestionFileError(f"{path}:{number}: duplicate id {qid!r}")
        seen.add(qid)
        try:
            question = Question(text.strip(), record.pop("before_clip", None), record.pop("video", None))
        except QueryError as exc:
            raise QuestionFileError(f"{path}:{number}: {exc}") from exc
        if "answer" in record:  # a ground-truth answer is kept beside the model's, never overwritten by it
            record["reference"] = record.pop("answer")
        items.append(QAItem(qid, question, record))
    return items


def answers_path(questions: str | Path, out: str | Path | None = None) -> Path:
    """Where the answers to ``questions`` go: ``out``, by default ``QUESTIONS.answers.jsonl`` beside them;
    never the questions file itself, by whatever name (a relative path, a symlink, a hard link)."""
    path = Path(out) if out else Path(os.path.splitext(questions)[0] + ".answers.jsonl")
    if not path.parent.is_dir():
        raise AnswersFileError(f"cannot write {path}: no folder {path.parent}")
    try:
        same = os.path.samefile(path, questions)
    except OSError:  # one of them does not exist (yet)
        same = False
    if same:
        raise AnswersFileError(f"{path} is the questions file {questions}: the answers would overwrite the "
                               "questions; choose another --out")
    return path


def _answers_file(path: str | Path) -> ResultsFile:
    return ResultsFile(path, ANSWER_KEYS, "m3agent qa", AnswersFileError)


def load_answers(path: str | Path) -> dict[str, dict]:
    """The answers an earlier run wrote (without failures or a torn last line), rewritten in place.
    The file is checked whole before it is rewritten: one line that is not ours and it is left untouched."""
    return _answers_file(path).load(keep=lambda record: not record.get("error"))


def answers_so_far(path: str | Path, items: list[QAItem]) -> dict[str, dict]:
    """:func:`load_answers`, refusing a file that answers other questions under the ids of ``items`` (ids
    such as ``q3`` are line numbers: another questions file has them too), whose answers would be skipped."""
    done = load_answers(path)
    for item in items:
        earlier = done.get(item.id)
        if earlier is not None and earlier.get("question") != item.question.text:
            raise AnswersFileError(f"{path} answers another question under id {item.id!r} "
                                   f"({earlier.get('question')!r}, not {item.question.text!r}); choose another --out")
    return done


def run_qa(controller: Controller, items: list[QAItem], out_path: str | Path, config: ControlConfig,
           on_done: Callable[[int], None] | None = None) -> QAReport:
    """Answer ``items`` into ``out_path``, each answer saved (flushed and synced) as soon as it is done.
    Ctrl-C raises :class:`QAInterrupted` once the answers finished so far are all on disk."""
    done = answers_so_far(out_path, items)
    todo = [item for item in items if item.id not in done]
    report = QAReport(total=len(items), skipped=len(items) - len(todo), answered=0, failed=0)
    size = max(1, config.batch_size)
    with _answers_file(out_path).appender() as out:
        try:
            for start in range(0, len(todo), size):
                group = todo[start:start + size]
                for index, answer in controller.iter_answers([item.question for item in group]):
                    _save(out, group[index], answer, report)
                    if on_done:
                        on_done(1)
        except KeyboardInterrupt as exc:
            raise QAInterrupted(report) from exc
    return report


def _save(out: Appender, item: QAItem, answer: Answer, report: QAReport) -> None:
    """Write one answer for good (a crash after this loses none of it) and count it. ``id`` comes first,
    which is how :func:`load_answers` tells a torn line of its own from a foreign one."""
    out.write({"id": item.id, **item.extra, "question": item.question.text,
               "before_clip": item.question.before_clip, "video": item.question.video, **answer.to_dict()})
    if answer.error:
        report.failed += 1
    else:
        report.answered += 1
        report.seconds.append(answer.seconds)
        report.rounds.append(sum(1 for r in answer.rounds if r.by == "model"))
