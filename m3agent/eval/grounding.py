"""Whether an answer says only what the notes said: the words of an answer that no note shown to the model holds.

A wrong answer made of the notes' own words read the wrong line (or the wrong number); a wrong answer with a word
that neither the notes nor the question hold was invented from what the model knew before ("Fettuccine Alfredo."
for a line about pasta with mushrooms). The benchmark report counts both, so a change to the model or to memory
reads as fewer inventions or as better reading. Numbers never count as invented: a total is worked out, not read.

An answer mostly invented is not given at all where ``control.quote_invented`` is on (:func:`quoted_answer`, a rule
the control step applies after the model's last round): the note nearest the question is given in its place. There,
a word counts as read only from a note that bears on the question (:func:`bearing_notes`): "Blue bowl." for "What did
Sarah buy at the market?", read from a line about car keys, is given no more than an invented answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence

from m3agent.eval.judge import normalized_tokens, stem
from m3agent.memory.lexical import STOPWORDS

#: words about what is known rather than facts: "I do not know." or "The notes do not say." invents nothing
_ABOUT_KNOWING = frozenset({"know", "knew", "unknown", "sure", "unclear", "mention", "say", "said", "tell", "told",
                            "note", "memory", "answer", "information", "find", "found"})
#: a verdict on a question of yes or no states no fact to invent ("Yes." to "Is the printer still broken?")
_VERDICTS = frozenset({"yes", "yeah", "true", "false"})


def unfound_words(answer: str, notes: Iterable[str], question: str = "") -> list[str]:
    """The words of ``answer`` (the judge's tokens: filler words dropped, number words as digits) found in none of
    ``notes`` and not in ``question``, each once, in the answer's order; numbers and function words ("not", "you")
    are never listed."""
    known = {stem(token) for text in (*notes, question) for token in normalized_tokens(text)}
    return list(dict.fromkeys(token for token in _meaningful(normalized_tokens(answer)) if stem(token) not in known))


def _meaningful(tokens: Iterable[str]) -> list[str]:
    """The tokens that could carry an invented fact: no number, no function word, no yes or no, no word about
    knowing."""
    return [t for t in tokens
            if not t.isdigit() and t not in STOPWORDS and t not in _VERDICTS and stem(t) not in _ABOUT_KNOWING]


def _content(text: str) -> list[str]:
    """The words of ``text`` that carry its meaning (:func:`_meaningful`), stemmed, each once."""
    return list(dict.fromkeys(stem(t) for t in _meaningful(normalized_tokens(text))))


def mostly_invented(answer: str, notes: Iterable[str], question: str = "") -> bool:
    """Whether most of the words that carry ``answer``'s meaning are in no note and not in the question: "Fettini."
    is, and so is "At the gym." for a chemist's shop; an answer with one word of two put in other words, or misheard
    ("Scrap the sting out sideways." for "scrape"), is not: a right answer replaced costs more than an invented one
    kept, which is flagged all the same."""
    words = _content(answer)
    return 2 * len(unfound_words(answer, notes, question)) > len(words)


def nearest_note(question: str, notes: Sequence[str]) -> str | None:
    """The note sharing most with ``question``: its words weighted by how few notes hold them (a name every line
    holds counts little); the first of equals, in the order shown; None when no note shares a word."""
    sets = [set(_content(note)) for note in notes]
    weight = {w: math.log((len(sets) + 1) / (1 + sum(w in s for s in sets))) + 1.0 for w in _content(question)}
    scores = [sum(weight.get(w, 0.0) for w in s) for s in sets]
    best = max(range(len(notes)), key=lambda i: (scores[i], -i), default=None)
    return None if best is None or scores[best] == 0.0 else notes[best]


#: a capitalised word: a name ("At 00:45 Dmitri says", "Mark is cooking"), or a sentence's first word, which
#: :func:`bearing_notes` takes as a name too when it is no function word (more notes bear, fewer answers are quoted)
_NAME = re.compile(r"\b[A-Z][a-z]+\b")


def bearing_notes(question: str, notes: Sequence[str]) -> list[str]:
    """The notes an answer to ``question`` can be read from: those sharing a word with it, and those sharing a
    name with one of these (the second hop: "What is the job of the person who moved the hairdryer?" is answered
    by a line about the job of the person the hairdryer's line names). A line about something else shares
    neither, and an answer made of its words was read from the wrong line."""
    asked, words = set(_content(question)), [set(_content(note)) for note in notes]
    near = [note for note, held in zip(notes, words) if asked & held]
    named = asked | {stem(name.lower()) for note in near for name in _NAME.findall(note)} - STOPWORDS
    return [note for note, held in zip(notes, words) if named & held]


#: a capitalised word inside a sentence, not its first: "At 00:45 Dmitri says", "the name is Mark"
_INNER_NAME = re.compile(r"(?<=[^\s.!?:\"(]\s)[A-Z][a-z]+\b")


def bridge_names(question: str, notes: Sequence[str]) -> list[str]:
    """The names the note nearest ``question`` holds and the question does not, in the note's order: whom a
    question that only describes a person ("What is the job of the person who moved the hairdryer?") is about,
    once the line about the hairdryer is found. A name is a word some note writes capitalised inside a sentence,
    so a sentence's first word ("Tonight I will cook") is none unless it is one elsewhere. None for a question
    that names someone itself ("Which city does Sarah's sister live in?"): it is searched by that name."""
    note = nearest_note(question, notes)
    if note is None or _INNER_NAME.search(question):
        return []
    names = {word for text in notes for word in _INNER_NAME.findall(text)}
    asked = {stem(token) for token in normalized_tokens(question)}
    found = [word for word in _NAME.findall(note) if word in names and stem(word.lower()) not in asked]
    return [word for word in dict.fromkeys(found) if word.lower() not in STOPWORDS]


def follow_up(control) -> Callable[[str, Sequence[str]], list[str]] | None:
    """What the control step searches after the seed search, from ``control`` (a ``ControlConfig``):
    :func:`bridge_names` where ``follow_names`` is on, else nothing. The one place that reads the setting, for the
    controller and the training environment alike."""
    return bridge_names if control.follow_names else None


def quoted_answer(question: str, lessons: Sequence[str], notes: Sequence[str], answer: str) -> str | None:
    """The note nearest the question, given instead of an answer mostly invented (:func:`mostly_invented` against
    the lessons shown and the notes shown that bear on the question, :func:`bearing_notes`); None keeps the model's
    answer. An :data:`~m3agent.control.protocol.AnswerRule`, passed by the factory when ``control.quote_invented``
    is on.

    Why: a small model that misses its line writes what it knew before ("Fettuccine Alfredo." for a line about pasta
    with mushrooms), and such an answer is right almost never; the line that shares most with the question is
    the one a reader would look at, and it says where the answer comes from. An answer read from a line that
    shares nothing with the question (a name the notes hold for another act, another person's belongings) is right
    as seldom (docs/RESULTS.md, "An answer read from a line about something else")."""
    if not notes or not mostly_invented(answer, [*bearing_notes(question, notes), *lessons], question):
        return None
    return nearest_note(question, notes)


def answer_unfound(answer) -> list[str]:
    """:func:`unfound_words` of an :class:`~m3agent.control.records.Answer` against the notes and feedback lessons it
    was shown; none for a failed answer, or for an answer a rule gave in the model's place (a user's correction, a
    quoted note)."""
    if answer.error or not answer.answer or (answer.rounds and answer.rounds[-1].replaced):
        return []
    shown = [line for lines in answer.notes.values() for line in lines] + list(answer.lessons)
    return unfound_words(answer.answer, shown, answer.question)


def unfound_note(words: list[str]) -> str:
    """The line users read under an answer with words no note shown holds ("" when there are none)."""
    return f"not in the notes shown: {', '.join(words)} (the model may have made this up)" if words else ""
