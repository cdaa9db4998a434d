"""The simulated user of MemoryBench: how satisfied it is with an answer, what it says, what it does.

Two paths, as in the benchmark. The **metric path** serves the corpus datasets (Locomo, DialSim), whose
corpus the simulator must not see: the answer is scored (Locomo token F1 > 0.5, DialSim accuracy) and the
user replies with one of two fixed texts. The **LLM-as-user path** serves every other dataset: a chat model
plays the user (a persona and the dataset's criteria) and replies in JSON with a satisfaction score 1-10,
whether it goes on, and what it says.

Actions (like, dislike, copy) follow the satisfaction score S through the action model
``P(like|S) = c_L * sigmoid(1.5 (S - 7.5))``, ``P(dislike|S) = c_D * sigmoid(-1.5 (S - 4.5))`` and, on
long-output tasks, ``P(copy|S) = 4 * P(like|S)``; ``c_L`` and ``c_D`` are set so that, over a reference
distribution of scores, the like and dislike rates are the global rates 0.0559 and 0.0091. Draws come
from a seeded generator per case, so a run repeats exactly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from m3agent.files.jsonl import LineError, loads
from m3agent.models.llm.base import ChatModel

LIKE_TEXT = "Great! That's correct. Thank you for the accurate answer."
DISLIKE_TEXT = "That doesn't seem quite right. Could you please try again and provide a more accurate answer?"
LIKE_RATE, DISLIKE_RATE = 0.0559, 0.0091
COPY_FACTOR = 4.0
#: satisfaction given to a metric-path verdict (the metric user is sure: right or wrong)
SATISFIED, DISSATISFIED = 9.0, 2.0


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@dataclass(frozen=True)
class ActionModel:
    c_like: float
    c_dislike: float
    copy_factor: float = COPY_FACTOR

    def p_like(self, score: float) -> float:
        return min(1.0, self.c_like * sigmoid(1.5 * (score - 7.5)))

    def p_dislike(self, score: float) -> float:
        return min(1.0, self.c_dislike * sigmoid(-1.5 * (score - 4.5)))

    def p_copy(self, score: float, long_output: bool) -> float:
        return min(1.0, self.copy_factor * self.p_like(score)) if long_output else 0.0

    def act(self, score: float, long_output: bool, rng: np.random.Generator) -> tuple[str, ...]:
        """The actions a user with satisfaction ``score`` takes (each drawn on its own)."""
        actions = []
        for name, p in (("like", self.p_like(score)), ("dislike", self.p_dislike(score)),
                        ("copy", self.p_copy(score, long_output))):
            if rng.random() < p:
                actions.append(name)
        return tuple(actions)

    @classmethod
    def calibrated(cls, scores: Sequence[float], like_rate: float = LIKE_RATE, dislike_rate: float = DISLIKE_RATE,
                   ) -> ActionModel:
        """``c_L``, ``c_D`` giving these global rates over the reference ``scores``."""
        values = [float(s) for s in scores]
        if not values:
            raise ValueError("calibration needs satisfaction scores")
        mean_like = sum(sigmoid(1.5 * (s - 7.5)) for s in values) / len(values)
        mean_dislike = sum(sigmoid(-1.5 * (s - 4.5)) for s in values) / len(values)
        return cls(like_rate / mean_like, dislike_rate / mean_dislike)


#: the reference score distribution: scores 1..10 equally likely (calibrate on real scores when you have them)
DEFAULT_ACTIONS = ActionModel.calibrated(range(1, 11))


@dataclass(frozen=True)
class Reaction:
    satisfaction: float | None
    actions: tuple[str, ...]
    reply: str | None  # what the user says next (None: the user ends the dialog)
    terminated: bool
    path: str  # "metric" or "llm"
    problem: str | None = None  # the user model's reply could not be used

    def to_dict(self) -> dict:
        return {"satisfaction": self.satisfaction, "actions": list(self.actions), "reply": self.reply,
                "terminated": self.terminated, "path": self.path, "problem": self.problem}


def case_rng(seed: int, key: str, round_no: int) -> np.random.Generator:
    """The generator of one case's round: the same case draws the same actions in every run."""
    digest = int.from_bytes(key.encode("utf-8")[:32].ljust(32, b"\0"), "little") % (2**63)
    return np.random.default_rng([seed, digest, round_no, len(key)])


@dataclass
class MetricUser:
    """Scores the answer with the dataset's metric; replies with the fixed like or dislike text."""

    correct: Callable[[str], bool]  # answer -> right?
    actions: ActionModel = DEFAULT_ACTIONS

    def react(self, answer: str, long_output: bool, rng: np.random.Generator) -> Reaction:
        right = bool(self.correct(answer))
        score = SATISFIED if right else DISSATISFIED
        return Reaction(score, self.actions.act(score, long_output, rng), LIKE_TEXT if right else DISLIKE_TEXT,
                        right, "metric")


USER_SYSTEM = """You play a user talking to an AI assistant. {persona}
Judge the assistant's latest answer against your original request and these criteria: {criteria}.
Reply with one JSON object and nothing else:
{{"reasoning": "<why>", "satisfaction_score": <integer 1-10>, "behavior": "continue_conversation" or "end_conversation", "response": "<what you say next, or null when you end>"}}
Write the response in {language}. Do not repeat your question; if the answer is good enough, end the conversation."""

PERSONAS = {
    "Open-Domain": "You asked for help with an everyday or creative task.",
    "Academic&Knowledge": "You are a researcher who asked for help with academic or technical work.",
    "Legal": "You are a legal professional who asked for help with a legal task.",
}
CRITERIA = {
    "LiSo": "faithfulness to the long material you gave, precision, brevity",
    "SiLo": "completeness, structure, quality of the writing",
    "LiLo": "use of the material you gave, completeness, quality of the writing",
    "SiSo": "correctness, precision, brevity",
}


@dataclass
class LLMUser:
    """A chat model plays the user; its JSON gives the satisfaction score, the actions come from the model."""

    chat: ChatModel
    actions: ActionModel = DEFAULT_ACTIONS
    retries: int = 1
    calls: list[int] = field(default_factory=list)

    def react(self, request: str, dialog: Sequence[dict], *, domain: str, task: str, lang: str, long_output: bool,
              rng: np.random.Generator) -> Reaction:
        system = USER_SYSTEM.format(persona=PERSONAS.get(domain, PERSONAS["Open-Domain"]),
                                    criteria=CRITERIA.get(task, CRITERIA["SiSo"]),
                                    language="Chinese (中文)" if lang == "zh" else "English")
        shown = "\n".join(f"{'User' if t.get('role') == 'user' else 'Assistant'}: {t.get('content', '')}" for t in dialog)
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": f"Your original request:\n{request}\n\nThe conversation so far:\n{shown}"}]
        problem = None
        for _ in range(self.retries + 1):
            text = self.chat.chat(messages, max_tokens=400, temperature=0.0).text
            self.calls.append(1)
            parsed, problem = parse_user_reply(text)
            if parsed is not None:
                score, go_on, reply = parsed
                return Reaction(score, self.actions.act(score, long_output, rng), reply if go_on else None,
                                not go_on, "llm")
        return Reaction(None, (), None, True, "llm", problem)


_JSON = re.compile(r"\{.*\}", re.S)


def parse_user_reply(text: str) -> tuple[tuple[float, bool, str | None] | None, str | None]:
    """``((score, continue, response), None)`` from the user model's JSON, or ``(None, why not)``."""
    text = re.sub(r"<think>.*?</think>", "", str(text), flags=re.S)
    match = _JSON.search(text)
    if not match:
        return None, f"the user model's reply is not JSON: {text[:80]!r}"
    try:
        data = loads(match.group(0))
    except LineError as exc:
        return None, f"the user model's reply is not valid JSON ({exc.msg}): {text[:80]!r}"
    if not isinstance(data, dict):
        return None, "the user model's JSON is not an object"
    try:
        score = float(data.get("satisfaction_score"))
    except (TypeError, ValueError):
        return None, "the user model's JSON has no numeric satisfaction_score"
    if not 1 <= score <= 10:
        return None, f"satisfaction_score {score:g} is outside 1-10"
    go_on = str(data.get("behavior", "")).strip() == "continue_conversation"
    response = data.get("response")
    response = " ".join(str(response).split()) if response not in (None, "") else None
    return (score, go_on and response is not None, response), None
