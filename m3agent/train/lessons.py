"""Feedback lessons in training prompts, so the control model learns what the feedback run asks of it.

A user's corrections come back to later questions as lessons (:func:`m3agent.eval.feedback.lesson_text`, the
nearest few shown with the question). A model never trained with them copies whatever a lesson says into its
answer, even when the lesson was about another question. Here a share of the training tasks gets the lessons its
world's other questions would have left (a wrong answer, corrected), and now and then one about the task's own
question: the reward then pays for answering from the notes, or from a lesson only when it is about this question.
The lessons are those of the questions most like the task's, as memory's search picks them for a real question
(two questions "... according to the text?" look alike and ask different things): the hard case, not a random one.

A lesson about the task's own question that agrees with memory (its correction is the reference answer) teaches
nothing a model reading memory does not already do; in use a correction comes exactly where memory misled the
model. So half the tasks that get one hide their evidence clips from search (``hidden``): the notes then hold no
answer, and only the user's correction earns the reward. Half of the rest are ``overruled``: the user called
memory's answer wrong and gave another, which becomes the task's reference, so the reward pays for taking the
user's word over the line memory shows (as when memory's line was misheard or out of date).
"""

from __future__ import annotations

import functools
import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from m3agent.eval.feedback import lesson_text
from m3agent.eval.judge import normalized_tokens
from m3agent.eval.overlap import overlap_f1

OWN_SHARE = 0.25  # of the tasks given lessons, those whose lessons include one about their own question
HIDDEN_SHARE = 0.5  # of those, the ones whose evidence search does not show (only the correction answers them)
OVERRULED_SHARE = 0.5  # of those not hidden, the ones whose correction overrules the answer memory shows
NO_OTHER_ANSWER = "I do not know."  # the wrong answer of a memory with no other question to borrow one from


def add_lessons(tasks: Sequence[dict[str, Any]], share: float, seed: int, most: int = 3,
                corrections: float = OWN_SHARE) -> int:
    """Give about ``share`` of ``tasks`` (in place) a ``lessons`` list of 1..``most`` corrections of other
    questions about the same memory, and ``corrections`` of those one about their own; returns how many got some.
    Seeded: a re-run gives the same lessons."""
    rng = random.Random(seed)
    world: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for task in tasks:
        world[(task.get("memory"), task.get("video"))].append(task)
    truth = {id(t): str(t.get("answer")) for t in tasks}  # what memory says, before a correction overrules it
    tokens = functools.cache(normalized_tokens)  # each question's words, once however often it is compared
    given = 0
    for task in tasks:
        if rng.random() >= share:
            continue
        others = [t for t in world[(task.get("memory"), task.get("video"))]
                  if t["question"] != task["question"] and t.get("answer")]
        answers = list(dict.fromkeys(truth[id(t)] for t in others))
        words = tokens(task["question"])
        nearest = sorted(others, key=lambda t: (-overlap_f1(tokens(t["question"]), words), rng.random()))
        picked = nearest[: rng.randint(1, most)]
        lessons = [lesson_text(t["question"], _wrong(rng, answers, truth[id(t)]), correction=truth[id(t)])
                   for t in picked]
        if task.get("answer") and rng.random() < corrections:
            right = truth[id(task)]
            wrong = _wrong(rng, answers, right)
            task["corrected"] = True
            if task.get("evidence") and rng.random() < HIDDEN_SHARE:
                task["hidden"] = sorted({int(c) for c in task["evidence"]})
            elif wrong != NO_OTHER_ANSWER and rng.random() < OVERRULED_SHARE:
                wrong, right = right, wrong  # memory's answer is the one the user called wrong
                task.update(answer=right, overruled=wrong)
                task.pop("worked", None)  # the working led to memory's answer
            lessons.insert(rng.randint(0, len(lessons)), lesson_text(task["question"], wrong, correction=right))
        if lessons:
            task["lessons"] = lessons
            given += 1
    return given


def _wrong(rng: random.Random, answers: list[str], right: str) -> str:
    """A plausible wrong answer: another question's answer about the same memory."""
    choices = [a for a in answers if a != right]
    return rng.choice(choices) if choices else NO_OTHER_ANSWER
