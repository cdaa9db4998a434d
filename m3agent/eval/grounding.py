"""Whether an answer says only what the notes said: the words of an answer that no note shown to the model holds.

A wrong answer made of the notes' own words read the wrong line (or the wrong number); a wrong answer with a word
that neither the notes nor the question hold was invented from what the model knew before ("Fettuccine Alfredo."
for a line about pasta with mushrooms). The benchmark report counts both, so a change to the model or to memory
reads as fewer inventions or as better reading. Numbers never count as invented: a total is worked out, not read.
"""

from __future__ import annotations

from collections.abc import Iterable

from m3agent.eval.judge import normalized_tokens
from m3agent.memory.lexical import STOPWORDS

_ENDINGS = ("ing", "ed", "es", "s")  # "fixes", "fixed" and "fix" are one word here; a crude stem, kept crude


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def unfound_words(answer: str, notes: Iterable[str], question: str = "") -> list[str]:
    """The words of ``answer`` (the judge's tokens: filler words dropped, number words as digits) found in none of
    ``notes`` and not in ``question``, each once, in the answer's order; numbers and function words ("not", "you")
    are never listed."""
    known = {_stem(token) for text in (*notes, question) for token in normalized_tokens(text)}
    return list(dict.fromkeys(token for token in normalized_tokens(answer)
                              if not token.isdigit() and token not in STOPWORDS and _stem(token) not in known))


def answer_unfound(answer) -> list[str]:
    """:func:`unfound_words` of an :class:`~m3agent.control.records.Answer` against the notes and feedback lessons it
    was shown; none for a failed answer, or for a user's correction given in the model's place."""
    if answer.error or not answer.answer or (answer.rounds and answer.rounds[-1].replaced):
        return []
    shown = [line for lines in answer.notes.values() for line in lines] + list(answer.lessons)
    return unfound_words(answer.answer, shown, answer.question)


def unfound_note(words: list[str]) -> str:
    """The line users read under an answer with words no note shown holds ("" when there are none)."""
    return f"not in the notes shown: {', '.join(words)} (the model may have made this up)" if words else ""
