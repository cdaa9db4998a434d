"""The three ways MemoryBench feeds a memory system before testing it.

* **off-policy**: the recorded training dialogs (with their recorded feedback) go into memory, shuffled
  with seed 42, then the test set is answered once.
* **stepwise**: the same dialogs in batches; the test set is answered before the first batch and after
  each one (how the score moves as memory grows).
* **on-policy**: for each step a seeded sample of training cases is lived through with the system under
  test: it answers from its current memory, the simulated user reacts (and the dialog goes on while the
  user does), the dialog and its lessons go into memory; the test set is answered after each step.

Corpora (Locomo's and DialSim's conversations) are memorized first in every driver. Lessons (procedural
memory) are learned only by systems that keep them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from m3agent.eval.feedback import lesson_text
from m3agent.eval.memorybench.datasets import dataset_info
from m3agent.eval.memorybench.records import MBRecord
from m3agent.eval.memorybench.scoring import metric_verdict
from m3agent.eval.memorybench.simulator import LLMUser, MetricUser, Reaction, case_rng
from m3agent.eval.memorybench.systems import MemorySystem
from m3agent.models.llm.base import ChatModel

DRIVERS = ("off-policy", "stepwise", "on-policy")
SHUFFLE_SEED = 42


@dataclass
class Lived:
    """One training case lived through: the dialog, its reactions, the lessons drawn."""

    dialog: list[dict]
    reactions: list[dict]
    lessons: list[str]
    error: str | None = None

    def to_dict(self) -> dict:
        return {"dialog": self.dialog, "reactions": self.reactions, "lessons": self.lessons, "error": self.error}


@dataclass
class Harness:
    """What a driver works with. ``evaluate(step)`` answers and scores the test set at a step;
    ``lived(key)`` / ``keep_lived(key, lived)`` let an interrupted on-policy run reuse what it lived."""

    system: MemorySystem
    chat: ChatModel
    user_chat: ChatModel | None
    judge: ChatModel | None
    evaluate: Callable[[str], None]
    lived: Callable[[str], Lived | None] = lambda key: None
    keep_lived: Callable[[str, Lived], None] = lambda key, lived: None
    seed: int = SHUFFLE_SEED
    max_rounds: int = 3
    batch: int = 100
    steps: int = 10
    memory_seconds: list[float] = field(default_factory=list)  # per training case or corpus newly learned


def recorded_lessons(record: MBRecord) -> list[str]:
    """Lessons from a record's recorded dialog and feedback: round r judges the r-th answer."""
    answers = [i for i, turn in enumerate(record.dialog) if turn.get("role") == "assistant"]
    out = []
    for turn in record.feedback:
        if not 1 <= turn.round <= len(answers):
            continue
        at = answers[turn.round - 1]
        reply = record.dialog[at + 1].get("content") if at + 1 < len(record.dialog) else None
        text = lesson_text(record.question(), record.dialog[at].get("content", ""), satisfaction=turn.satisfaction,
                           actions=turn.actions, reply=reply)
        if text:
            out.append(text)
    return out


def learn_corpora(h: Harness, corpora: dict[str, list[dict]]) -> None:
    for conversation, rows in corpora.items():
        started = time.perf_counter()
        if h.system.learn_corpus(conversation, rows):
            h.memory_seconds.append(time.perf_counter() - started)


def learn_recorded(h: Harness, records: Sequence[MBRecord]) -> None:
    for record in records:
        started = time.perf_counter()
        if h.system.learn_dialog(record.key, record.dialog or _first_turn(record), recorded_lessons(record)):
            h.memory_seconds.append(time.perf_counter() - started)


def _first_turn(record: MBRecord) -> list[dict]:
    return list(record.messages) or [{"role": "user", "content": record.question()}]


def shuffled(records: Sequence[MBRecord], seed: int) -> list[MBRecord]:
    out = list(records)
    random.Random(seed).shuffle(out)
    return out


def off_policy(h: Harness, train: Sequence[MBRecord], corpora: dict[str, list[dict]]) -> None:
    learn_corpora(h, corpora)
    learn_recorded(h, shuffled(train, h.seed))
    h.evaluate("final")


def stepwise(h: Harness, train: Sequence[MBRecord], corpora: dict[str, list[dict]]) -> None:
    learn_corpora(h, corpora)
    h.evaluate("begin")
    order = shuffled(train, h.seed)
    for start in range(0, len(order), h.batch):
        learn_recorded(h, order[start : start + h.batch])
        h.evaluate(f"[{start},{min(start + h.batch, len(order))})")


def on_policy(h: Harness, train: Sequence[MBRecord], corpora: dict[str, list[dict]]) -> None:
    learn_corpora(h, corpora)
    rng = random.Random(h.seed)
    pool = list(train)
    for step in range(1, h.steps + 1):
        batch = rng.sample(pool, min(h.batch, len(pool)))  # each step draws from the whole pool, as published
        for record in batch:
            key = f"step{step}:{record.key}"
            lived = h.lived(key)
            if lived is None:
                lived = live(h, record, step)
                h.keep_lived(key, lived)
            started = time.perf_counter()
            if h.system.learn_dialog(key, lived.dialog, lived.lessons):
                h.memory_seconds.append(time.perf_counter() - started)
        h.evaluate(f"step {step}")


def live(h: Harness, record: MBRecord, step: int) -> Lived:
    """The system answers a training case and the simulated user reacts, for up to ``max_rounds`` answers."""
    info = dataset_info(record.dataset)
    dialog = _first_turn(record)
    history: list[dict] = []
    reactions, lessons = [], []
    try:
        for round_no in range(1, h.max_rounds + 1):
            answer, _ = h.system.answer(record, h.chat, history)
            dialog.append({"role": "assistant", "content": answer})
            history.append({"role": "assistant", "content": answer})
            if round_no == h.max_rounds:
                break  # the last answer gets no feedback, as published
            reaction = react(h, record, dialog, answer, info, step, round_no)
            reactions.append(reaction.to_dict())
            text = lesson_text(record.question(), answer, satisfaction=reaction.satisfaction,
                               actions=reaction.actions, reply=reaction.reply)
            if text:
                lessons.append(text)
            if reaction.terminated or reaction.reply is None:
                break
            dialog.append({"role": "user", "content": reaction.reply})
            history.append({"role": "user", "content": reaction.reply})
    except Exception as exc:  # noqa: BLE001 - one failing case is recorded, the run goes on
        return Lived(dialog, reactions, lessons, f"{type(exc).__name__}: {exc}")
    return Lived(dialog, reactions, lessons)


def react(h: Harness, record: MBRecord, dialog: list[dict], answer: str, info, step: int, round_no: int) -> Reaction:
    rng = case_rng(h.seed, record.key, step * 100 + round_no)
    if info.corpus:  # the simulator may not see the corpus: the metric decides
        user = MetricUser(lambda text: metric_verdict(record, text, h.judge))
        return user.react(answer, info.long_output, rng)
    if h.user_chat is None:
        return Reaction(None, (), None, True, "llm", "no user model: set bench.memorybench.user (a chat backend)")
    return LLMUser(h.user_chat).react(record.question(), dialog, domain=info.domain, task=info.task, lang=record.lang,
                                      long_output=info.long_output, rng=rng)


RUNNERS = {"off-policy": off_policy, "stepwise": stepwise, "on-policy": on_policy}
