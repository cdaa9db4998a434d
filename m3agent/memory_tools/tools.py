"""Memory-operation tools a chat model calls while it reads a stream: insert, update, delete, search.

Three kinds of memory, all on the project's memory core (one text source of a memory DB):

* ``core``: a small text block shown to the model at every step (who the user is, standing goals). It is
  kept in the source's metadata, at most ``core_chars`` characters: ``insert`` appends a line,
  ``update`` replaces the whole block, ``delete`` empties it (no ``id``).
* ``semantic``: lasting facts, semantic lines of the source (a repeated fact reinforces the line that
  already says it, as for videos).
* ``episodic``: events with their time, episodic lines of the source.

``update`` and ``delete`` of a line supersede it at the current chunk's clip (see
:mod:`m3agent.memory.edits`): today's memory forgets it, an as-of search before that clip still finds it.

**The call format** (the one the prompts teach): after any ``</think>``, every line of the reply that
starts with ``{`` is one call, a JSON object::

    {"tool": "insert", "kind": "semantic", "text": "Caroline is a counsellor."}
    {"tool": "update", "kind": "episodic", "id": 41, "text": "[8 May] Caroline moved to Boston."}
    {"tool": "delete", "kind": "semantic", "id": 12}
    {"tool": "search", "query": "where does Caroline work", "k": 5}

Other lines (notes, code fences) are ignored. A call that is not JSON, names no known tool or kind, or
lacks a field is answered with what is wrong, and the others still run: a malformed reply never stops a
stream.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from m3agent.config import MemoryBuildConfig
from m3agent.errors import M3AgentError
from m3agent.files.jsonl import LineError, loads
from m3agent.memory.graph import MemoryGraph
from m3agent.memory.model import NodeKind, TextNode
from m3agent.models.llm.base import answer_text

TOOLS = ("insert", "update", "delete", "search")
KINDS = ("core", "semantic", "episodic")
_LINE_KINDS = {"semantic": NodeKind.SEMANTIC, "episodic": NodeKind.EPISODIC}
_ID = re.compile(r"^\[?\s*(\d+)\s*\]?$")
CORE_KEY = "core"  # the source's metadata key holding the core block
MAX_ID = 2**63 - 1  # the largest id SQLite can hold: a larger one names no line


class ToolCallError(M3AgentError, ValueError):
    """A call that cannot run as written; its message is what the model is told."""


@dataclass(frozen=True)
class ToolCall:
    tool: str
    kind: str | None = None
    id: int | None = None
    text: str | None = None
    query: str | None = None
    k: int | None = None

    def label(self) -> str:
        what = " ".join(str(p) for p in (self.tool, self.kind, self.id) if p is not None)
        return f'{what} "{_short(self.query)}"' if self.query else what


@dataclass
class ToolResult:
    """What one call did (or why it did nothing), in the words the model reads next."""

    call: ToolCall | None  # None: the line could not be read as a call at all
    ok: bool
    message: str
    node: int | None = None  # the line written (insert, update)
    hits: list[dict] = field(default_factory=list)  # search results

    def render(self) -> str:
        head = self.call.label() if self.call is not None else "unreadable call"
        lines = [f"- {head}: {'' if self.ok else 'ERROR: '}{self.message}"]
        lines += [f"    {format_line(hit)}" for hit in self.hits]
        return "\n".join(lines)


@dataclass
class ParsedReply:
    calls: list[ToolCall]
    errors: list[ToolResult]  # one per line that looked like a call but is not a valid one

    @property
    def malformed(self) -> bool:
        return bool(self.errors)


def format_line(hit: dict) -> str:
    """How a stored line is shown to the model: its id (for update/delete), kind, clip and text."""
    return f"[{hit['node']}] {hit['kind']} (chunk {hit['clip']}): {hit['text']}"


def _short(text: str, n: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def parse_tool_calls(reply: str, max_calls: int = 16) -> ParsedReply:
    """The calls of a reply in the module's format; every problem becomes an error result, never an exception."""
    calls: list[ToolCall] = []
    errors: list[ToolResult] = []
    objects: list[tuple[int, object]] = []
    for number, line in enumerate(answer_text(str(reply or "")).splitlines(), start=1):
        line = line.strip().rstrip(",")
        if not line.startswith(("{", "[{")):
            continue
        try:
            value = loads(line)
        except LineError as exc:
            errors.append(ToolResult(None, False, f"line {number} is not one JSON object ({exc.msg}); "
                                                  "write each call as a JSON object on a line of its own"))
            continue
        objects.extend((number, item) for item in (value if isinstance(value, list) else [value]))
    for number, value in objects:
        if len(calls) >= max_calls:
            errors.append(ToolResult(None, False, f"more than {max_calls} calls in one reply; the rest were not run"))
            break
        try:
            calls.append(_call(value))
        except ToolCallError as exc:
            errors.append(ToolResult(None, False, f"line {number}: {exc}"))
    return ParsedReply(calls, errors)


def _call(value: object) -> ToolCall:
    if not isinstance(value, dict):
        raise ToolCallError("a call is a JSON object with a \"tool\"")
    tool = value.get("tool")
    if tool not in TOOLS:
        raise ToolCallError(f"\"tool\" must be one of {', '.join(TOOLS)} (got {tool!r})")
    if tool == "search":
        query = value.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolCallError("search needs a \"query\" (text)")
        k = value.get("k")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_ID):
            raise ToolCallError("search \"k\" must be a whole number >= 1")
        return ToolCall("search", query=" ".join(query.split()), k=k)
    kind = value.get("kind")
    if kind not in KINDS:
        raise ToolCallError(f"{tool} needs a \"kind\": one of {', '.join(KINDS)} (got {kind!r})")
    node = None
    if kind != "core" and tool in ("update", "delete"):
        node = _node_id(value.get("id"), tool)
    text = None
    if tool in ("insert", "update"):
        text = value.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ToolCallError(f"{tool} needs a \"text\" (the memory to write)")
        text = " ".join(text.split())
    return ToolCall(tool, kind, node, text)


def _node_id(value: object, tool: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ID:
        return value
    match = _ID.match(str(value).strip()) if isinstance(value, str) else None
    if match and len(match.group(1)) <= 18:
        return int(match.group(1))
    raise ToolCallError(f"{tool} needs the \"id\" of a line (a number shown in brackets), got {value!r}")


@dataclass(frozen=True)
class MemorySize:
    lines: int
    chars: int  # core block and live lines together: what a size penalty counts


class MemoryTools:
    """The tools, bound to one text source of a memory graph. ``clip`` is where the current chunk's
    lines go (the caller sets it per chunk)."""

    def __init__(self, graph: MemoryGraph, video_id: int, config: MemoryBuildConfig | None = None):
        self.graph, self.video_id = graph, video_id
        self.config = config or MemoryBuildConfig()
        self.clip = 0

    # ------------------------------------------------------------------ reading
    def core(self) -> str:
        return str(self.graph.video_meta(self.video_id).get(CORE_KEY, ""))

    def live(self) -> list[TextNode]:
        """The source's semantic and episodic lines that today's memory holds."""
        return list(self.graph.live_lines(self.video_id).values())

    def counts(self) -> dict[NodeKind, int]:
        return dict(Counter(n.kind for n in self.live()))

    def size(self) -> MemorySize:
        live = self.live()
        return MemorySize(len(live), len(self.core()) + sum(len(n.text) for n in live))

    def search(self, query: str, k: int) -> list[dict]:
        """The ``k`` best live lines for ``query`` (empty while the source holds none)."""
        if self.graph.last_clip(self.video_id) < 0 or not query.strip():
            return []  # nothing written yet: no vectors to search
        return self.graph.search(query, video=self.video_id, lines=k).lines

    def recall(self, question: str, k: int) -> str:
        """What memory offers for a question: the core block and the ``k`` best lines (the evidence a
        downstream answer is judged on)."""
        parts = [self.core()] + [hit["text"] for hit in self.search(question, k)]
        return "\n".join(p for p in parts if p)

    # ------------------------------------------------------------------ acting
    def apply(self, calls: Sequence[ToolCall]) -> list[ToolResult]:
        """Run the calls in order; each failure is a result the model reads, the others still run."""
        results = []
        for call in calls:
            try:
                results.append(self._run(call))
            except ToolCallError as exc:
                results.append(ToolResult(call, False, str(exc)))
        return results

    def _run(self, call: ToolCall) -> ToolResult:
        if call.tool == "search":
            k = min(call.k or self.config.search_lines, self.config.max_search_lines)
            hits = self.search(call.query or "", k)
            return ToolResult(call, True, f"{len(hits)} line(s)" if hits else "nothing stored matches", hits=hits)
        if call.kind == "core":
            return self._core(call)
        if call.tool != "delete" and len(call.text or "") > self.config.line_chars:
            raise ToolCallError(f"the text has {len(call.text or '')} characters, at most {self.config.line_chars} "
                                "fit a line: split it")
        if call.tool == "insert":
            return self._insert(call)
        old = self._live(call)
        if call.tool == "delete":
            self.graph.retire_lines([old], self.clip)
            return ToolResult(call, True, f"deleted [{old}]")
        node, _ = self._write(call.kind or "", call.text or "", supersedes=old)
        return ToolResult(call, True, f"[{old}] replaced by [{node}]", node=node)

    def _live(self, call: ToolCall) -> int:
        node = self.graph.live_lines(self.video_id, [call.id]).get(call.id)  # type: ignore[list-item]
        if node is None:
            raise ToolCallError(f"memory holds no line [{call.id}] (deleted, replaced, or never written): "
                                "search to find the ids of stored lines")
        if node.kind is not _LINE_KINDS[call.kind or ""]:
            raise ToolCallError(f"[{call.id}] is a {node.kind.label} line, not {call.kind}")
        return node.id

    def _insert(self, call: ToolCall) -> ToolResult:
        node, reinforced = self._write(call.kind or "", call.text or "")
        if reinforced:
            return ToolResult(call, True, f"[{node}] already says this: reinforced, nothing added", node=node)
        return ToolResult(call, True, f"stored as [{node}]", node=node)

    def _write(self, kind: str, text: str, supersedes: int | None = None) -> tuple[int, bool]:
        """Write one line in the current clip: the id of the line that holds it now, and whether that is
        an existing semantic line the new one reinforced (the writer folds repeated facts)."""
        clip, graph = self.clip, self.graph
        with graph.editing():  # an update lands whole: new line in, old one retired
            with graph.clip(self.video_id, clip, float(clip), float(clip + 1), append=True) as batch:
                if kind == "semantic":
                    line = batch.semantic(text, supersedes=() if supersedes is None else (supersedes,))
                else:
                    line = batch.episodic(text)
            if line in batch.report.reinforced:
                return batch.report.reinforced[line], True
            if supersedes is not None and kind == "episodic":  # semantic lines supersede as they are written
                graph.retire_lines([supersedes], clip, by=line)
        return line, False

    def _core(self, call: ToolCall) -> ToolResult:
        old = self.core()
        if call.tool == "delete":
            new = ""
        elif call.tool == "update":
            new = call.text or ""
        else:
            new = f"{old}\n{call.text}" if old else call.text or ""
        if len(new) > self.config.core_chars:
            raise ToolCallError(f"the core block would hold {len(new)} characters, at most {self.config.core_chars}: "
                                "update it with a shorter text, or store details as semantic lines")
        self.graph.update_video_meta(self.video_id, **{CORE_KEY: new})
        return ToolResult(call, True, f"core block now {len(new)} characters" if new else "core block emptied")
