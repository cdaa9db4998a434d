"""The control process: a chat model searches the memory graph over several rounds, then answers.

Each round the model replies ``Action: [Search]`` or ``Action: [Answer]`` with a ``Content:``; only
the text after a reasoning model's ``</think>`` counts. A search goes through the memory core (a
"character id" question returns individual lines, anything else whole new clips); a reply that
does not follow the format is used as a search query as it stands. The last round must answer.
Character ids in the answer are replaced by the names the memory knows.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field

from m3agent.config import ControlConfig
from m3agent.memory.graph import MemoryGraph
from m3agent.memory.search import Episode
from m3agent.memory.tags import rewrite_tags
from m3agent.models.llm.base import ChatModel, answer_text
from m3agent.prompts import load_prompt

_ACTION = re.compile(r"action\s*:\s*\[?\s*(answer|search)\s*\]?\s*(?:content\s*:\s*)?(.*)", re.IGNORECASE | re.DOTALL)
_CONTENT = re.compile(r"content\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)
EMPTY_RESULT = "(The search result is empty. Please try searching from another perspective.)"


@dataclass
class Round:
    action: str  # "search" | "answer"
    content: str
    clips: list[int] = field(default_factory=list)
    malformed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


@dataclass
class Answer:
    question: str
    answer: str
    rounds: list[Round]
    seconds: float

    @property
    def tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.rounds)

    def to_dict(self) -> dict:
        return {"answer": self.answer, "rounds": [{"action": r.action, "content": r.content, "clips": r.clips}
                                                  for r in self.rounds],
                "seconds": round(self.seconds, 3), "trace": [asdict(r) for r in self.rounds]}


def parse_action(text: str) -> tuple[str, str, bool]:
    """``(action, content, malformed)`` from a model reply."""
    reply = answer_text(text)
    match = _ACTION.search(reply)
    if match:
        content = match.group(2).strip()
        inner = _CONTENT.search(content)
        return match.group(1).lower(), (inner.group(1) if inner else content).strip(), False
    return "search", reply.strip(), True


class Controller:
    def __init__(self, graph: MemoryGraph, chat: ChatModel, config: ControlConfig | None = None):
        self.graph, self.chat, self.config = graph, chat, config or ControlConfig()

    def answer(self, question: str, *, video: int | str | None = None, before_clip: int | None = None) -> Answer:
        start = time.perf_counter()
        video_row = self.graph.resolve_video(video)
        episode = Episode()
        rounds: list[Round] = []
        messages = [{"role": "system", "content": load_prompt("control_system").format(question=question)}]
        total = max(1, self.config.max_rounds)
        final = ""
        for number in range(1, total + 1):
            last = number == total
            instruction = load_prompt("control_last_round") if last else \
                load_prompt("control_round").format(round=number, rounds=total)
            messages.append({"role": "user", "content": instruction})
            reply = self.chat.chat(messages, max_tokens=self.config.max_tokens, temperature=self.config.temperature)
            action, content, malformed = parse_action(reply.text)
            step = Round(action, content, malformed=malformed, prompt_tokens=reply.prompt_tokens,
                         completion_tokens=reply.completion_tokens, seconds=reply.seconds)
            rounds.append(step)
            messages.append({"role": "assistant", "content": reply.text})
            if action == "answer" or last:
                step.action = "answer"
                final = content
                break
            result = self.graph.search(content or question, video=video_row.id, before_clip=before_clip,
                                       episode=episode)
            step.clips = [c.id for c in result.clips]
            knowledge = {f"CLIP_{c.id}": c.lines for c in result.clips}
            text = "Searched knowledge: " + json.dumps(knowledge, ensure_ascii=False)
            if result.empty:
                text += "\n" + EMPTY_RESULT
            messages.append({"role": "user", "content": text})
        return Answer(question, self._named(final, video_row.id, before_clip), rounds,
                      time.perf_counter() - start)

    def _named(self, text: str, video_id: int, before_clip: int | None) -> str:
        names = self.graph.names(video_id, before_clip)
        cmap = self.graph.characters(video_id, before_clip)

        def sub(kind: str, number: int) -> str:
            character = number if kind == "character" else cmap.character_of(number)
            return names.get(character, "an unnamed person") if character is not None else "an unnamed person"

        return rewrite_tags(text, sub).strip()
