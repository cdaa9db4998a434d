"""What a question, a round and an answer are: the records every driver of the control step shares.

``Answer.to_dict`` is the JSON shape of ``m3agent ask --json`` and of each line ``m3agent qa`` writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from m3agent.memory.search import QueryError, check_before_clip


@dataclass
class Question:
    """An empty question, or a ``before_clip`` that is no clip number, is refused here, before any search
    or model call could answer it with nothing (``before_clip`` comes out as :func:`check_before_clip` reads it)."""

    text: str
    before_clip: int | None = None
    video: int | str | None = None

    def __post_init__(self) -> None:
        if not str(self.text).strip():
            raise QueryError("the question is empty")
        self.before_clip = check_before_clip(self.before_clip)


@dataclass
class Round:
    action: str  # "search" | "answer"
    content: str
    clips: list[int] = field(default_factory=list)
    by: str = "model"  # "model", or "seed" for the search of the question made before round 1
    malformed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0  # model time of this round
    search_seconds: float = 0.0
    hits: list[dict] = field(default_factory=list)  # clip, start, end, score of each returned clip
    replaced: str = ""  # the model's own answer when a rule gave another in its place (``content``: the one given)
    replaced_by: str = ""  # the rule that did: "correction" or "quote" (:data:`REPLACED_BECAUSE`)

    def replaced_note(self) -> str:
        return replaced_note(self.replaced, self.replaced_by)


#: what users read after "the model said '...'," for each rule that may give an answer in the model's place
REPLACED_BECAUSE = {
    "correction": "which the user had corrected: the correction is given",
    "quote": "which no note shown about the question holds: the note nearest the question is given",
}


def replaced_note(replaced: str, by: str) -> str:
    """Why the answer given is not the model's ``replaced``, as users read it ("" when it is the model's)."""
    return f"the model said {replaced!r}, {REPLACED_BECAUSE.get(by, 'which a rule replaced')}" if replaced else ""


@dataclass
class Answer:
    question: str
    answer: str
    rounds: list[Round]
    seconds: float
    error: str | None = None
    notes: dict[int, list[str]] = field(default_factory=dict, repr=False)  # clip -> lines shown, names filled in
    lessons: list[str] = field(default_factory=list, repr=False)  # the feedback lessons shown with the question

    @property
    def tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.rounds)

    @property
    def evidence(self) -> list[dict]:
        """Every clip the searches returned, in the order they came."""
        return [hit for r in self.rounds for hit in r.hits]

    def to_dict(self) -> dict:
        data = {"answer": self.answer,
                "rounds": [{"action": r.action, "content": r.content, "clips": r.clips} |
                           ({"replaced": r.replaced, "replaced_by": r.replaced_by} if r.replaced else {})
                           for r in self.rounds],
                "seconds": round(self.seconds, 3), "tokens": self.tokens, "trace": [asdict(r) for r in self.rounds]}
        if self.error:
            data["error"] = self.error
        return data
