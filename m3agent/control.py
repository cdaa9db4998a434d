"""The control process: a chat model searches the memory graph over several rounds, then answers.

Each round the model replies ``Action: [Search]`` or ``Action: [Answer]`` with a ``Content:``; only
the text after a reasoning model's ``</think>`` counts. A search goes through the memory core (a
"character id" question returns individual lines, anything else whole new clips); a reply that
does not follow the format is used as a search query as it stands. The last round must answer.
Character ids in the answer are replaced by the names the memory knows.

By default the question itself is searched before the first round (``seed_search``), so even a small
model starts from evidence; this costs one memory search (milliseconds) and no model round.

:meth:`Controller.answer_many` moves many questions through their rounds in lock step, one
``chat.batch`` call per round, so a batching backend (vLLM, a concurrent server client) sees them
together. A conversation that outgrows the context window loses its oldest search results first; a
question whose model call fails for good gets an :class:`Answer` with ``error`` set, and the others go on.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from m3agent.config import ControlConfig
from m3agent.memory.errors import MemoryStoreError
from m3agent.memory.graph import MemoryGraph
from m3agent.memory.search import SeenClips
from m3agent.memory.tags import rewrite_tags
from m3agent.models.llm.base import (
    ChatError,
    ChatModel,
    ChatResponse,
    ContextOverflowError,
    answer_text,
)
from m3agent.prompts import load_prompt

log = logging.getLogger(__name__)

_ACTION = re.compile(r"action\s*:\s*\[?\s*(answer|search)\s*\]?\s*(?:content\s*:\s*)?(.*)", re.IGNORECASE | re.DOTALL)
_CONTENT = re.compile(r"content\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)
_PLAIN_ANSWER = re.compile(r"^\W*(?:the\s+)?(?:final\s+)?answer\b(?:\s+is\b)?\s*[:\-]?\s*(.+)", re.IGNORECASE | re.DOTALL)
#: the model must never write these; stopping there cuts small models' echoes of the prompt short
STOP = ("\nQuestion:", "Search results for ")
EMPTY_RESULT = "(The search result is empty. Please try searching from another perspective.)"
KNOWLEDGE_PREFIX = "Search results for "
DROPPED = KNOWLEDGE_PREFIX + "an earlier query: (dropped to fit the context window)"
MAX_QUERY_CHARS = 300  # a malformed reply searches with its first line, cut to this


@dataclass
class Question:
    text: str
    before_clip: int | None = None
    video: int | str | None = None


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


@dataclass
class Answer:
    question: str
    answer: str
    rounds: list[Round]
    seconds: float
    error: str | None = None
    notes: dict[int, list[str]] = field(default_factory=dict, repr=False)  # clip -> lines shown, names filled in

    @property
    def tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.rounds)

    @property
    def evidence(self) -> list[dict]:
        """Every clip the searches returned, in the order they came."""
        return [hit for r in self.rounds for hit in r.hits]

    def to_dict(self) -> dict:
        data = {"answer": self.answer,
                "rounds": [{"action": r.action, "content": r.content, "clips": r.clips} for r in self.rounds],
                "seconds": round(self.seconds, 3), "tokens": self.tokens, "trace": [asdict(r) for r in self.rounds]}
        if self.error:
            data["error"] = self.error
        return data


def format_results(query: str, result) -> str:
    """Search results as the model reads them: one block of note lines per clip, with its time span."""
    out = [KNOWLEDGE_PREFIX + json.dumps(query, ensure_ascii=False) + ":"]
    for clip in result.clips:
        out.append(f"CLIP_{clip.id} ({_clock(clip.start)}-{_clock(clip.end)}):")
        out.extend(f"- {line}" for line in clip.lines)
    if result.empty:
        out.append(EMPTY_RESULT)
    return "\n".join(out)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60:02d}:{seconds % 60:02d}"


def parse_action(text: str) -> tuple[str, str, bool]:
    """``(action, content, malformed)`` from a model reply."""
    reply = answer_text(text)
    match = _ACTION.search(reply)
    if match:
        content = match.group(2).strip()
        inner = _CONTENT.search(content)
        return match.group(1).lower(), (inner.group(1) if inner else content).strip(), False
    plain = _PLAIN_ANSWER.match(reply)
    if plain:  # "The answer is ...": small models answer without the format
        return "answer", plain.group(1).strip().strip('"').strip(), True
    return "search", reply.strip(), True


@dataclass
class _Conversation:
    question: Question
    video_id: int
    messages: list[dict]
    seen: SeenClips = field(default_factory=SeenClips)
    rounds: list[Round] = field(default_factory=list)
    pending: str = ""  # search results waiting to go out with the next instruction
    notes: dict[int, list[str]] = field(default_factory=dict)
    final: str | None = None
    error: str | None = None
    start: float = field(default_factory=time.perf_counter)
    end: float | None = None  # when its answer (or error) came: questions of one batch finish apart


class Controller:
    def __init__(self, graph: MemoryGraph, chat: ChatModel, config: ControlConfig | None = None):
        self.graph, self.chat, self.config = graph, chat, config or ControlConfig()

    def answer(self, question: str, *, video: int | str | None = None, before_clip: int | None = None) -> Answer:
        answer = self.answer_many([Question(question, before_clip, video)])[0]
        if answer.error:
            raise ChatError(answer.error)
        return answer

    def answer_many(self, questions: Sequence[Question],
                    on_round: Callable[[int, int], None] | None = None) -> list[Answer]:
        """Answers in question order; ``on_round(round, questions still open)`` reports progress."""
        conversations = [self._start(q) for q in questions]
        total = max(1, self.config.max_rounds)
        for number in range(1, total + 1):
            active = [c for c in conversations if c.final is None and c.error is None]
            if not active:
                break
            if on_round:
                on_round(number, len(active))
            last = number == total
            template = load_prompt("control_last_round" if last else "control_round")
            for conv in active:
                instruction = template.format(round=number, rounds=total, question=conv.question.text)
                conv.messages.append({"role": "user", "content": (conv.pending + "\n\n" + instruction).strip()})
                conv.pending = ""
            for conv, reply in zip(active, self._replies(active)):
                if reply is not None:
                    self._step(conv, reply, last)
                if conv.final is not None or conv.error is not None:
                    conv.end = time.perf_counter()
        return [self._finish(c) for c in conversations]

    def _start(self, question: Question) -> _Conversation:
        system = load_prompt("control_system").format(question=question.text)
        try:
            video_id = self.graph.resolve_video(question.video).id
        except MemoryStoreError as exc:  # e.g. a question naming a video this DB does not hold
            return _Conversation(question, -1, [], error=str(exc))
        conv = _Conversation(question, video_id, [{"role": "system", "content": system}])
        if self.config.seed_search:
            step = Round("search", question.text, by="seed")
            conv.rounds.append(step)
            conv.pending = self._search(conv, step, question.text)
        return conv

    def _replies(self, active: list[_Conversation]) -> list[ChatResponse | None]:
        """One reply per conversation; on a batch failure, each conversation on its own."""
        options = {"max_tokens": self.config.max_tokens, "temperature": self.config.temperature, "stop": STOP}
        try:
            return self.chat.batch([c.messages for c in active], **options)
        except ChatError as exc:
            if len(active) > 1 or isinstance(exc, ContextOverflowError):
                log.info("batch of %d failed (%s); asking one by one", len(active), exc)
            else:
                active[0].error = str(exc)
                return [None]
        replies: list[ChatResponse | None] = []
        for conv in active:
            replies.append(self._reply_fitting(conv, options))
        return replies

    def _reply_fitting(self, conv: _Conversation, options: dict) -> ChatResponse | None:
        """Ask for one reply, dropping the oldest search results while the conversation is too long."""
        while True:
            try:
                return self.chat.chat(conv.messages, **options)
            except ContextOverflowError as exc:
                if not self._drop_oldest_knowledge(conv):
                    conv.error = f"the question does not fit the model's context window: {exc}"
                    return None
            except ChatError as exc:
                conv.error = str(exc)
                return None

    @staticmethod
    def _drop_oldest_knowledge(conv: _Conversation) -> bool:
        for message in conv.messages:
            content = message["content"]
            if message["role"] == "user" and content.startswith(KNOWLEDGE_PREFIX) and not content.startswith(DROPPED):
                instruction = content.split("\n\n", 1)[1] if "\n\n" in content else ""
                message["content"] = (DROPPED + "\n\n" + instruction).strip()
                return True
        return False

    def _step(self, conv: _Conversation, reply: ChatResponse, last: bool) -> None:
        action, content, malformed = parse_action(reply.text)
        step = Round(action, content, malformed=malformed, prompt_tokens=reply.prompt_tokens,
                     completion_tokens=reply.completion_tokens, seconds=reply.seconds)
        conv.rounds.append(step)
        conv.messages.append({"role": "assistant", "content": reply.text})
        if action == "answer" or last:
            step.action = "answer"
            conv.final = content
            return
        conv.pending = self._search(conv, step, self._query(content, malformed, conv.question.text))

    @staticmethod
    def _query(content: str, malformed: bool, question: str) -> str:
        """The search a reply asks for; a malformed reply searches with its first line (small models
        tend to echo the notes back, which would make a useless query: the question is used then)."""
        if malformed:
            content = next((line for line in content.splitlines() if line.strip()), "")[:MAX_QUERY_CHARS]
            if content.startswith(KNOWLEDGE_PREFIX) or content.lstrip("- ").startswith("CLIP_"):
                content = ""
        return content.strip() or question

    def _search(self, conv: _Conversation, step: Round, query: str) -> str:
        start = time.perf_counter()
        result = self.graph.search(query, video=conv.video_id, before_clip=conv.question.before_clip,
                                   seen=conv.seen)
        step.search_seconds = time.perf_counter() - start
        step.clips = [c.id for c in result.clips]
        step.hits = [{"clip": c.id, "start": c.start, "end": c.end, "score": round(c.score, 4)} for c in result.clips]
        for clip in result.clips:
            conv.notes.setdefault(clip.id, []).extend(clip.lines)
        return format_results(query, result)

    def _finish(self, conv: _Conversation) -> Answer:
        before = conv.question.before_clip
        if conv.video_id < 0:
            return Answer(conv.question.text, "", conv.rounds, 0.0, conv.error)
        named = self.namer(conv.video_id, before)  # one names/characters lookup for the answer and all its notes
        text = named(conv.final) if conv.final is not None else ""
        notes = {clip: [named(line) for line in lines] for clip, lines in conv.notes.items()}
        return Answer(conv.question.text, text, conv.rounds, (conv.end or time.perf_counter()) - conv.start,
                      conv.error, notes)

    def namer(self, video_id: int, before_clip: int | None = None) -> Callable[[str], str]:
        """A function replacing character (and face/voice) ids in a text by the names memory knows."""
        names = self.graph.names(video_id, before_clip)
        cmap = self.graph.characters(video_id, before_clip)

        def sub(kind: str, number: int) -> str:
            character = number if kind == "character" else cmap.character_of(number)
            return names.get(character, "an unnamed person") if character is not None else "an unnamed person"

        return lambda text: rewrite_tags(text, sub).strip()
