"""Corrections the user made to this very question, held to: an answer the user called wrong is not given again.

A lesson from a correction (:func:`m3agent.eval.feedback.lesson_text`) says which answer was wrong for which
question and what the user said instead. The control model is shown it, and a small one still repeats the
rejected answer when memory's line says so (it was misheard, or the model read the wrong line). Repeating an
answer the user rejected is the one mistake that cannot be right by the user's own word, so the control step
gives the correction instead (:func:`held_answer`, passed to it by the factory when ``control.hold_corrections``
is on; never in training, where the model's own answer is what is rewarded). Only a lesson about the same
question counts (its words, normalized, are the question's), and an answer that also gives the correction is
left alone. The one case it can get wrong: a question about what holds now, corrected, asked again after the thing
changed back to the rejected answer; the lesson still gives the old correction.
"""

from __future__ import annotations

from collections.abc import Iterable

from m3agent.eval.feedback import correction_of
from m3agent.eval.judge import normalized_tokens, offline_match


def corrections_for(question: str, lessons: Iterable[str]) -> list[tuple[str, str]]:
    """``(rejected, corrected)`` answers of the lessons that correct ``question`` itself, in the lessons' order."""
    asked = normalized_tokens(question)
    held = []
    for lesson in lessons:
        parsed = correction_of(lesson)
        if parsed is not None and normalized_tokens(parsed[0]) == asked:
            held.append((parsed[1], parsed[2]))
    return held


def corrected_answer(answer: str, corrections: Iterable[tuple[str, str]]) -> str | None:
    """The correction to give instead of ``answer`` when it repeats a rejected answer; None to keep it."""
    for rejected, corrected in corrections:
        if offline_match(answer, rejected)[0] and not offline_match(answer, corrected)[0]:
            return corrected
    return None


def held_answer(question: str, lessons: Iterable[str], notes: Iterable[str], answer: str) -> str | None:
    """The user's correction to give instead of ``answer`` to ``question`` (with ``lessons`` shown), or None; an
    :data:`~m3agent.control.protocol.AnswerRule` (the notes shown play no part)."""
    return corrected_answer(answer, corrections_for(question, lessons))
