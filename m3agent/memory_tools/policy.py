"""The memory-construction policy: a chat model reads a stream chunk by chunk and keeps memory with tools.

:class:`MemoryBuilder` is the protocol of one stream, shared by the untrained policy here
(``m3agent remember --policy chat``) and the training environment (:mod:`m3agent.envs.memory_build`): the
system prompt, the observation of each chunk (the core block, stored lines related to the chunk with their
ids, the results of the previous reply's calls, the chunk) and the application of a reply's tool calls.
:func:`build_memory` runs any chat backend over text records: each chunk is one request holding the system
prompt and that chunk's observation (memory itself carries what earlier chunks taught), so context stays
bounded on streams of any length. Records done are noted in the source's metadata after their chunk, so an
interrupted run resumes by being run again.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from m3agent.config import BUNDLED_ADAPTER, ChatConfig, Config, MemoryBuildConfig
from m3agent.errors import M3AgentError
from m3agent.memory.graph import MemoryGraph
from m3agent.memory.model import NodeKind
from m3agent.memory.text_sources import TextRecord, parse_record
from m3agent.memory_tools.tools import (
    MemoryTools,
    ParsedReply,
    ToolResult,
    format_line,
    parse_tool_calls,
)
from m3agent.models.llm.base import ChatModel
from m3agent.prompts import load_prompt

DONE_KEY = "policy_records"  # the source's metadata key listing the records a policy has read


@dataclass(frozen=True)
class Chunk:
    """What the policy reads in one step: text records of one session, or one clip description."""

    text: str
    records: tuple[str, ...] = ()  # ids of the records it holds (text sources: how a re-run skips them)
    session: str | None = None


def record_chunks(records: Sequence[TextRecord], per_chunk: int) -> list[Chunk]:
    """Consecutive records of the same session (or without one), at most ``per_chunk`` to a chunk."""
    chunks: list[Chunk] = []
    group: list[TextRecord] = []
    for record in records:
        if group and (record.session != group[0].session or len(group) >= per_chunk):
            chunks.append(_chunk(group))
            group = []
        group.append(record)
    if group:
        chunks.append(_chunk(group))
    return chunks


def _chunk(records: list[TextRecord]) -> Chunk:
    return Chunk("\n".join(r.line() for r in records), tuple(r.id for r in records), records[0].session)


def chunks_of(items: Iterable[object], per_chunk: int) -> list[Chunk]:
    """A task's stream: record objects ``{"id", "text", ...}`` (grouped as :func:`record_chunks` does) and
    plain strings (a clip description or a passage: one chunk each), in order. ValueError names a bad item."""
    chunks: list[Chunk] = []
    pending: list[TextRecord] = []
    for item in items:
        if isinstance(item, dict):
            pending.append(parse_record(item))
            continue
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"a chunk is a record object or non-empty text, not {item!r}")
        chunks += record_chunks(pending, per_chunk)
        pending = []
        chunks.append(Chunk(" ".join(item.split())))
    return chunks + record_chunks(pending, per_chunk)


@dataclass
class Tally:
    """What the policy did over a stream: replies, calls run, calls refused, replies with a malformed call."""

    replies: int = 0
    calls: int = 0
    failed: int = 0
    malformed: int = 0

    def add(self, parsed: ParsedReply, results: list[ToolResult]) -> None:
        """One reply: ``results`` are all its results, unreadable calls included."""
        self.replies += 1
        self.calls += len(parsed.calls)
        self.failed += sum(not r.ok for r in results)
        self.malformed += parsed.malformed


class MemoryBuilder:
    """One stream's protocol over :class:`MemoryTools`: what the policy is shown, and what its reply does."""

    def __init__(self, tools: MemoryTools, config: MemoryBuildConfig | None = None):
        self.tools = tools
        self.config = config or tools.config
        self.last: list[ToolResult] = []  # the previous reply's results, shown with the next chunk
        self.tally = Tally()

    @staticmethod
    def system() -> dict:
        return {"role": "system", "content": load_prompt("memory_tools_system")}

    def observation(self, chunk: Chunk, number: int, total: int) -> dict:
        """The user message for chunk ``number`` (1-based) of ``total``."""
        tools = self.tools
        counts = tools.counts()
        related = tools.search(chunk.text, self.config.shown_lines) if self.config.shown_lines else []
        text = load_prompt("memory_tools_chunk").format(
            number=number, total=total, core=tools.core() or "(empty)",
            semantic=counts.get(NodeKind.SEMANTIC, 0), episodic=counts.get(NodeKind.EPISODIC, 0),
            related="\n".join(format_line(hit) for hit in related) or "(none)",
            results="\n".join(r.render() for r in self.last) or "(none)", chunk=chunk.text)
        return {"role": "user", "content": text}

    def act(self, reply: str, clip: int) -> list[ToolResult]:
        """Run a reply's calls with new lines going to ``clip``; every problem becomes a result the next
        observation shows, never an exception."""
        parsed = parse_tool_calls(reply, self.config.max_calls)
        self.tools.clip = clip
        results = parsed.errors + self.tools.apply(parsed.calls)
        self.tally.add(parsed, results)
        self.last = results
        return results


@dataclass
class BuildReport:
    source: str
    chunks: int = 0
    already: int = 0  # records an earlier run had read (or repeated ids)
    tally: Tally = field(default_factory=Tally)
    lines: int = 0  # live semantic and episodic lines of the source afterwards
    core_chars: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict:
        t = self.tally
        return {"source": self.source, "policy": "chat", "chunks": self.chunks, "already_read": self.already,
                "calls": t.calls, "failed_calls": t.failed, "malformed_replies": t.malformed, "lines": self.lines,
                "core_chars": self.core_chars, "seconds": round(self.seconds, 3)}


def build_memory(chat: ChatModel, graph: MemoryGraph, source: str, records: Iterable[TextRecord],
                 config: MemoryBuildConfig | None = None, *,
                 progress: Callable[[int], None] | None = None) -> BuildReport:
    """Let ``chat`` build the memory of text source ``source`` from ``records`` (see the module)."""
    config = config or MemoryBuildConfig()
    started = time.perf_counter()
    video_id = graph.claim_text_source(source)
    done = list(graph.video_meta(video_id).get(DONE_KEY, []))
    seen = set(done)
    report = BuildReport(source)
    fresh = []
    for record in records:
        if record.id in seen:
            report.already += 1
            continue
        seen.add(record.id)
        fresh.append(record)
    tools = MemoryTools(graph, video_id, config)
    builder = MemoryBuilder(tools, config)
    chunks = record_chunks(fresh, config.chunk_records)
    for number, chunk in enumerate(chunks, start=1):
        messages = [builder.system(), builder.observation(chunk, number, len(chunks))]
        reply = chat.chat(messages, max_tokens=config.max_tokens, temperature=config.temperature)
        builder.act(reply.text, graph.last_clip(video_id) + 1)
        done += chunk.records
        graph.update_video_meta(video_id, **{DONE_KEY: done})
        report.chunks += 1
        if progress is not None:
            progress(len(chunk.records))
    report.tally = builder.tally
    size = tools.size()
    report.lines, report.core_chars = size.lines, len(tools.core())
    report.seconds = time.perf_counter() - started
    return report


class PolicyUsageError(M3AgentError, ValueError):
    """A policy asked for something it does not do."""


def policy_chat(config: Config, *, procedural: bool = False) -> ChatConfig:
    """The policy's chat model: ``train.memory_build.chat``, or ``control.chat`` while that is left at its
    defaults (the model that answers is the one that keeps memory, unless told otherwise), without the shipped
    control adapter."""
    if procedural:
        raise PolicyUsageError("--policy chat builds what happened and what is known; procedural records "
                               "(lessons) are stored as they are: leave out --policy chat")
    chat = config.train.memory_build.chat
    if chat != ChatConfig():
        return chat
    if config.control.chat.adapter == BUNDLED_ADAPTER:  # the shipped adapter learned to answer, not to keep memory
        return dataclasses.replace(config.control.chat, adapter="")
    return config.control.chat


class ChatPolicy:
    """The untrained policy: any chat backend running :func:`build_memory`."""

    def __init__(self, chat: ChatModel, config: MemoryBuildConfig | None = None):
        self.chat, self.config = chat, config or MemoryBuildConfig()

    def build(self, graph: MemoryGraph, source: str, records: Iterable[TextRecord], *,
              progress: Callable[[int], None] | None = None) -> BuildReport:
        return build_memory(self.chat, graph, source, records, self.config, progress=progress)
