"""The control task's reward: is the answer right (the project's judges), with optional shaping.

The reward is binary judge correctness, M3-Agent's training signal: 1 when the judge says the ground truth
can be inferred from the answer, 0 when it says no or decides nothing (never counted as right). Shaping
(:class:`m3agent.config.RewardConfig`, each term off by default) subtracts:

- ``id_penalty`` once when the model's raw answer still holds ``<character_3>``, ``<face_1>`` or
  ``<voice_2>`` tags (the prompt asks for names; ids are replaced before judging, so the verdict alone
  would not teach this);
- ``malformed_penalty`` for each model reply that followed no ``Action: [...]`` format;
- ``round_cost`` for each model round used (the seed search is free: the model did not ask for it).

The judge decides the answer users read (ids replaced by names), so training and the bench score alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from m3agent.config import RewardConfig
from m3agent.control.records import Round
from m3agent.eval.annotations import BenchItem
from m3agent.eval.judge import Judge, Verdict
from m3agent.memory.tags import TAG_RE
from m3agent.models.llm.base import answer_text


@dataclass
class Episode:
    """One finished question: what the reward is computed from."""

    question: str
    reference: str  # the ground truth; empty when there is none (the app, a user's own question)
    answer: str  # as users read it: ids replaced by names
    raw: str = ""  # the model's own answer text, ids included
    rounds: Sequence[Round] = ()
    id: str = ""


@dataclass
class Reward:
    total: float
    correct: bool | None  # the verdict; None: no verdict, or no reference to judge against
    verdict: Verdict | None = None  # who decided, and why
    ids_left: bool = False
    malformed: int = 0  # model replies that followed no format
    rounds: int = 0  # model rounds used
    shaping: float = 0.0  # what shaping added (<= 0)
    terms: dict[str, float] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """Flat numbers for a trainer's logs (verl's ``reward_extra_info``): one value per key, always."""
        return {"score": self.total, "correct": 1.0 if self.correct else 0.0,
                "judged": 0.0 if self.correct is None else 1.0, "ids_left": float(self.ids_left),
                "malformed": float(self.malformed), "rounds": float(self.rounds), "shaping": self.shaping}


def has_ids(text: str) -> bool:
    """Whether ``text`` holds a character, face or voice id tag."""
    return TAG_RE.search(text or "") is not None


_ANSWER = re.compile(r"action\s*:\s*\[?\s*answer\s*\]?\s*(?:content\s*:\s*)?", re.IGNORECASE)


def final_answer(transcript: str) -> str:
    """The last answer in a decoded rollout (replies and search results run together, as a trainer's reward
    function sees them): the content after the last ``Action: [Answer]`` up to the next blank line, else the
    last paragraph after any ``</think>`` (a reply that answered without the format)."""
    text = answer_text(str(transcript or ""))
    matches = list(_ANSWER.finditer(text))
    tail = text[matches[-1].end():] if matches else text
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", tail) if p.strip()]
    if not paragraphs:
        return ""
    return paragraphs[0] if matches else paragraphs[-1]


class Rewarder:
    """Judges finished episodes in one batch and applies the shaping of a :class:`RewardConfig` (built from
    config by :func:`m3agent.factory.build_rewarder`)."""

    def __init__(self, judge: Judge | None, config: RewardConfig | None = None):
        self.judge, self.config = judge, config or RewardConfig()  # no judge: episodes go unjudged (the app)

    def score(self, episode: Episode) -> Reward:
        return self.score_many([episode])[0]

    def score_many(self, episodes: Sequence[Episode]) -> list[Reward]:
        """One reward per episode, in order; the judge sees every episode with a reference in one call."""
        verdicts = [self._unjudged(e) for e in episodes]
        judged = [i for i, v in enumerate(verdicts) if v is None]
        items = [(BenchItem(episodes[i].id or str(i), "", episodes[i].question, episodes[i].reference),
                  episodes[i].answer) for i in judged]
        for i, verdict in zip(judged, self.judge.judge_many(items) if items else []):
            verdicts[i] = verdict
        return [self._reward(e, v) for e, v in zip(episodes, verdicts)]

    def _unjudged(self, episode: Episode) -> Verdict | None:
        """The verdict of an episode no judge needs to see (None: the judge decides)."""
        if not episode.reference.strip():
            return Verdict(None, "none", reason="no reference answer to judge against")
        if self.judge is None:
            return Verdict(None, "none", reason="no judge configured")
        if not episode.answer.strip():
            return Verdict(False, "none", reason="no answer")
        return None

    def _reward(self, episode: Episode, verdict: Verdict) -> Reward:
        model_rounds = [r for r in episode.rounds if r.by == "model"]
        malformed = sum(r.malformed for r in model_rounds)
        ids_left = has_ids(episode.raw)
        cfg = self.config
        terms = {"ids": -cfg.id_penalty * ids_left, "malformed": -cfg.malformed_penalty * malformed,
                 "rounds": -cfg.round_cost * len(model_rounds)}
        shaping = sum(terms.values())
        correct = verdict.correct
        return Reward(float(bool(correct)) + shaping, correct, verdict, ids_left, malformed, len(model_rounds),
                      shaping, terms)
