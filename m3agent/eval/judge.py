"""Judges: is an agent's answer right? One base, one verdict shape, backends registered by name.

``chat`` is M3-Agent's judge: a chat model is asked at temperature 0 whether the ground truth can be
inferred from the answer, and must reply yes or no. A reply that is neither is asked again, then recorded
as unparseable (``correct`` None): never counted as right. ``offline`` needs no model: normalized
containment of the ground truth in the answer (not as one item of a short list of candidates), or token F1 at
or above a bar with every number and ordinal of the ground truth given and not half of its words swapped for
others. It is for CI and quick checks, and its label says it is not the paper's judge. Multiple-choice
questions need no judge at all: :func:`score_choice` compares the letter chosen with the annotated one.
"""

from __future__ import annotations

import re
import string
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from m3agent.eval.annotations import LETTERS, BenchItem
from m3agent.eval.overlap import overlap_f1
from m3agent.models.llm.base import ChatError, ChatModel, answer_text
from m3agent.prompts import load_prompt


@dataclass
class Verdict:
    correct: bool | None  # None: no verdict (the judge failed or its reply was neither yes nor no)
    judge: str  # which judge decided, e.g. "chat:gpt-4o" or "offline"
    reply: str = ""  # what the judge said
    reason: str = ""  # why there is no verdict, or how it was reached

    def to_dict(self) -> dict:
        return asdict(self)


class Judge(ABC):
    """Decides each (question, answer) pair; ``label`` names the judge in every result and report."""

    label: str = "judge"
    paper: bool = False  # whether this is the paper's judging protocol

    @classmethod
    def from_config(cls, config, **deps) -> Judge:
        return cls(config, **deps)

    @classmethod
    def describe(cls, config) -> str:
        """The label a judge built from ``config`` carries (results record it; a re-run with another
        judge judges again)."""
        return cls.label

    @abstractmethod
    def judge_many(self, pairs: Sequence[tuple[BenchItem, str]]) -> list[Verdict]:
        """One verdict per ``(item, answer)``, in order; never raises for one bad pair."""


# ---------------------------------------------------------------------------------------------- offline
_FILLER = {"a", "an", "the", "in", "on", "at", "of", "to", "for", "with", "by", "from", "and", "or", "is", "are",
           "was", "were", "be", "it", "its", "s",
           "he", "she", "they", "his", "her", "their", "him", "them"}
# words that carry no answer: "In the garage." = "garage", and "He is a cashier." shares nothing with "He is a
# surveyor." (with the pronoun kept they would share half their words, enough for the F1 bar)
_NUMBERS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                            "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
_ORDINALS = {w: i + 1 for i, w in enumerate("first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
                                             "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth "
                                             "eighteenth nineteenth twentieth".split())}
_ENDINGS = ("ing", "ed", "es", "s")
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")


def normalized_tokens(text: str) -> list[str]:
    """Lower case, accents and punctuation gone, filler words dropped, number words as digits."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode() or str(text)
    text = text.lower().translate(str.maketrans({c: " " for c in string.punctuation}))
    return [_NUMBERS.get(w, w) for w in text.split() if w not in _FILLER]


def answer_f1(answer: str, reference: str) -> float:
    """The judge's word overlap: filler words dropped, number words as digits (so "In the garage." = "garage",
    "seven" = "7"); MemoryBench's own ``token_f1`` keeps its benchmark's SQuAD rule instead."""
    return overlap_f1(normalized_tokens(answer), normalized_tokens(reference))


def contains(answer: str, reference: str) -> bool:
    """The normalized reference appears in the normalized answer as whole words."""
    a, r = normalized_tokens(answer), normalized_tokens(reference)
    return bool(r) and any(a[i:i + len(r)] == r for i in range(len(a) - len(r) + 1))


def _numeral(token: str) -> str | None:
    """A normalized token as a number ("7") or an ordinal ("3rd", from "third" or "3rd"); None for a word."""
    if token.isdigit():
        return token
    match = _ORDINAL.fullmatch(token)
    number = int(match.group(1)) if match else _ORDINALS.get(token)
    if number is None:
        return None
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def numbers_missing(answer: str, reference: str) -> list[str]:
    """The numbers and ordinals of the reference (digits or words) that the answer does not give."""
    given = {_numeral(t) for t in normalized_tokens(answer)}
    return [n for t in normalized_tokens(reference) if (n := _numeral(t)) is not None and n not in given]


def stem(word: str) -> str:
    """A normalized token without its ending: "fixes", "fixed" and "fix" are one word here (crude, kept crude)."""
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def words_swapped(answer: str, reference: str) -> tuple[list[str], list[str]]:
    """The reference's words an answer leaves out and the words it gives in their place, when it gives at most half
    the reference and adds words of its own ("A green umbrella." for "A red umbrella."; "Red umbrellas." for "A red
    umbrella." is no swap); two empty lists otherwise. Token F1 alone takes such an answer: one word of two shared
    is F1 0.5."""
    def forms(word: str) -> set[str]:  # "times" is "time" and "fixes" is "fix"
        return {stem(word), word[:-1] if word.endswith("s") else word}

    given, wanted = (list(dict.fromkeys(normalized_tokens(text))) for text in (answer, reference))
    given_forms, wanted_forms = (set().union(*map(forms, words)) for words in (given, wanted))
    left_out = [word for word in wanted if not forms(word) & given_forms]
    added = [word for word in given if not forms(word) & wanted_forms]
    return (left_out, added) if added and 2 * len(left_out) >= len(wanted) else ([], [])


#: what joins the items of a list: "Bonnie and Jessica", "tea, coffee or juice", "red/white"
_COORDINATOR = re.compile(r"\s*(?:[,;&/]|\band\b|\bor\b)\s*", re.IGNORECASE)
_JOINED = re.compile(r"[&/]|\band\b|\bor\b", re.IGNORECASE)


def listed_with(answer: str, reference: str) -> list[str]:
    """The other items of a short list in which ``answer`` names ``reference`` ("Jessica" for "Bonnie and Jessica."
    where the ground truth is "Bonnie."): naming several candidates where one is asked is a hedge, which containment
    alone takes, and a reward that took it would teach listing. Only where the reference is one or two words and no
    list itself, the answer joins its items with "and", "or", "&" or "/", and no item is longer than the
    reference ("Pasta with mushrooms and garlic." for "Pasta." adds a detail, not a candidate); [] otherwise."""
    wanted = normalized_tokens(reference)
    if not 0 < len(wanted) <= 2 or _COORDINATOR.search(reference.strip(" .!?")) or not _JOINED.search(answer):
        return []
    items = [tokens for part in _COORDINATOR.split(answer) if (tokens := normalized_tokens(part))]
    if len(items) < 2 or wanted not in items or any(len(tokens) > len(wanted) for tokens in items):
        return []
    return [" ".join(tokens) for tokens in items if tokens != wanted]


def offline_match(answer: str, reference: str, f1: float = 0.5) -> tuple[bool, str]:
    """Whether ``answer`` gives ``reference`` (the offline judge's rule: containment, or token F1 of at least
    ``f1`` with every number and ordinal of the reference given and no half of it swapped for other words), and
    why."""
    score = answer_f1(answer, reference)
    if contains(answer, reference):
        if others := listed_with(answer, reference):  # "Bonnie and Jessica" for "Bonnie": a hedge
            return False, f"the answer names {others[0]!r} beside the ground truth (a list of candidates)"
        return True, "the answer contains the ground truth"
    if missing := numbers_missing(answer, reference):  # "Seven kilometers" shares half of "Ten kilometers"
        return False, f"the answer lacks the number {missing[0]} (token F1 {score:.2f})"
    left_out, added = words_swapped(answer, reference)
    if left_out:  # "At a construction firm." shares half of "At a lighting firm." and names another firm
        return False, f"the answer gives {added[0]!r} where the ground truth says {left_out[0]!r} (token F1 {score:.2f})"
    return score >= f1, f"token F1 {score:.2f} (bar {f1:g})"


class OfflineJudge(Judge):
    label = "offline (containment but no list, or token F1 with no number or half swapped; not the paper's judge)"

    def __init__(self, config=None, f1: float | None = None):
        self.f1 = f1 if f1 is not None else (config.f1 if config is not None else 0.5)

    def judge_many(self, pairs: Sequence[tuple[BenchItem, str]]) -> list[Verdict]:
        out = []
        for item, answer in pairs:
            correct, reason = offline_match(answer, item.reference, self.f1)
            out.append(Verdict(correct, self.label, reason=reason))
        return out


# ---------------------------------------------------------------------------------------------- chat
_YES = {"yes", "y", "true", "correct", "right", "是", "对", "是的", "oui", "si", "sí", "ja", "да"}
_NO = {"no", "n", "false", "incorrect", "wrong", "否", "不", "不是", "不能", "non", "nein", "нет"}
_LEAD = re.compile(r"^(?:final\s+)?(?:answer|verdict|judge?ment|decision|reply|response|output)\s*(?:is\s*)?[:：-]?\s*",
                   re.IGNORECASE)
_STATED = re.compile(r"\b(?:answer|verdict|judge?ment|decision)\s*(?:is|:)\s*\**\s*(yes|no)\b", re.IGNORECASE)


def parse_yes_no(reply: str) -> bool | None:
    """True for yes, False for no, None for anything else (a refusal, garbage, both or neither).

    Accepted: a leading yes/no in any case or markup ("**Yes.**", "No, because ...", "Answer: yes",
    "是"), a stated verdict later on ("... so the answer is no"), or one of the two words alone in a short
    reply. A reply that says both without a leading or stated verdict decides nothing."""
    text = answer_text(str(reply or "")).strip()
    text = re.sub(r"[*_`#>\"'“”‘’\[\]()]", " ", text).strip()
    text = _LEAD.sub("", text).strip()
    opening = [w.lower() for w in re.split(r"[\s,.;:!?，。！？、]+", text)[:3]] if text else [""]
    first = opening[0]
    if {"yes", "no"} <= set(opening):  # "Yes and no", "yes or no": undecided
        return None
    if first in _YES:
        return True
    if first in _NO:
        return False
    stated = _STATED.findall(text)
    if stated:
        return stated[-1].lower() == "yes"
    words = set(re.findall(r"[a-z]+", text.lower()))
    if len(text) <= 200:
        found = {"yes", "no"} & words
        if len(found) == 1:
            return found == {"yes"}
    return None


class ChatJudge(Judge):
    """M3-Agent's judge through any chat backend (configured apart from the control model)."""

    requires = ("chat",)
    paper = True

    def __init__(self, config=None, chat: ChatModel | None = None, retries: int | None = None,
                 max_tokens: int = 256):
        if chat is None:
            raise ValueError("ChatJudge needs a chat model")
        self.chat = chat
        self.retries = retries if retries is not None else (config.retries if config is not None else 2)
        self.max_tokens = max_tokens  # room for a reasoning model's thinking before its yes or no
        self.label = self.describe(config) if config is not None else f"chat:{chat.name} {self._protocol}"

    _protocol = "(M3-Agent's yes/no judge, temperature 0)"

    @classmethod
    def describe(cls, config) -> str:
        chat = config.chat
        backend = chat.backend or "auto"
        model = chat.model or ("bundled SmolLM2-135M-Instruct" if backend == "auto" else "")
        return f"chat:{backend}{':' + model if model else ''} {cls._protocol}"

    def judge_many(self, pairs: Sequence[tuple[BenchItem, str]]) -> list[Verdict]:
        conversations = [[{"role": "user", "content": load_prompt("judge_m3bench").format(
            question=item.question, reference=item.reference, answer=answer)}] for item, answer in pairs]
        verdicts: list[Verdict | None] = [None] * len(pairs)
        open_ = list(range(len(pairs)))
        for attempt in range(self.retries + 1):
            replies = self._replies([conversations[i] for i in open_])
            still = []
            for index, reply in zip(open_, replies):
                if isinstance(reply, ChatError):
                    verdicts[index] = Verdict(None, self.label, reason=f"the judge did not answer: {reply}")
                    continue
                decided = parse_yes_no(reply)
                if decided is not None:
                    verdicts[index] = Verdict(decided, self.label, reply=reply)
                    continue
                verdicts[index] = Verdict(None, self.label, reply=reply, reason=f"unparseable judge reply after "
                                          f"{attempt + 1} asks: neither yes nor no")
                conversations[index] = conversations[index] + [
                    {"role": "assistant", "content": reply}, {"role": "user", "content": load_prompt("judge_retry")}]
                still.append(index)
            open_ = still
            if not open_:
                break
        return verdicts  # type: ignore[return-value]

    def _replies(self, conversations: list[list[dict]]) -> list[str | ChatError]:
        """Each conversation's reply text, or its :class:`ChatError` (a batch failure is retried one by one)."""
        try:
            return [r.text for r in self.chat.batch(conversations, max_tokens=self.max_tokens, temperature=0.0)]
        except ChatError:
            pass
        out: list[str | ChatError] = []
        for messages in conversations:
            try:
                out.append(self.chat.chat(messages, max_tokens=self.max_tokens, temperature=0.0).text)
            except ChatError as exc:
                out.append(exc)
        return out


# ---------------------------------------------------------------------------------------------- choice
def choice_prompt(item: BenchItem) -> str:
    return load_prompt("multiple_choice").format(question=item.question, options="\n".join(item.options))


def extract_choice(answer: str, options: Sequence[str]) -> str | None:
    """The option letter an answer picks: "B", "(B)", "B. text", "The answer is B", or the text of exactly
    one option; None when it names none or several."""
    text = answer_text(str(answer or "")).strip()
    letters = LETTERS[:len(options)]
    lead = re.match(rf"^\W*([{letters}])(?:[).:,\s]|$)", text)
    if lead:
        return lead.group(1)
    stated = re.findall(rf"\b(?:answer|option|choice)\s*(?:is|:)?\s*\(?([{letters}])\b", text, re.IGNORECASE)
    if stated:
        return stated[-1].upper()
    bare = set(re.findall(rf"(?<![A-Za-z])\(?([{letters}])\)?(?![A-Za-z])", text))
    if len(bare) == 1:
        return bare.pop()
    lowered = " ".join(normalized_tokens(text))
    named = [letter for letter, option in zip(letters, options)
             if (body := " ".join(normalized_tokens(re.sub(r"^[A-H][.)]\s*", "", option)))) and body in lowered]
    return named[0] if len(named) == 1 else None


def score_choice(item: BenchItem, answer: str) -> Verdict:
    """Right when the letter chosen is the annotated one; an answer that picks no option is wrong."""
    chosen = extract_choice(answer, item.options)
    if chosen is None:
        return Verdict(False, "choice", reason="the answer picks no single option")
    return Verdict(chosen == item.reference, "choice", reply=chosen, reason=f"chose {chosen}, key {item.reference}")
