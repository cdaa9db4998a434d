"""The memory systems MemoryBench scores, all on the project's memory core (one SQLite DB each).

``core`` is ours: message-level lines ranked by fused search (BM25 + vectors), plus procedural memory
learned from feedback (what the user liked, disliked or corrected), retrieved on its own and shown as
lessons. The baselines use the same store and differ only in ranking and granularity, as in the paper:
``bm25-m`` / ``embed-m`` keep each message as a line, ``bm25-s`` / ``embed-s`` each session (a whole
dialog) as one line, ranked by BM25 alone or by the vectors alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from m3agent.errors import M3AgentError
from m3agent.eval.memorybench.datasets import dataset_info
from m3agent.eval.memorybench.records import MBRecord, load_corpus
from m3agent.memory.graph import MemoryGraph
from m3agent.memory.text_sources import TextRecord
from m3agent.models.llm.base import ChatModel

DIALOGS = "dialogs"  # the text source of what the system lived through (training dialogs with feedback)


class UnknownSystemError(M3AgentError, ValueError):
    pass


@dataclass(frozen=True)
class SystemSpec:
    name: str
    retrieval: str  # "fused", "lexical" or "dense"
    sessions: bool  # one line per session (S) instead of one per message (M)
    procedural: bool  # learns lessons from feedback as procedural memory


SYSTEMS = {s.name: s for s in (
    SystemSpec("core", "fused", False, True),
    SystemSpec("bm25-m", "lexical", False, False),
    SystemSpec("bm25-s", "lexical", True, False),
    SystemSpec("embed-m", "dense", False, False),
    SystemSpec("embed-s", "dense", True, False),
)}


def system_spec(name: str) -> SystemSpec:
    try:
        return SYSTEMS[name]
    except KeyError:
        raise UnknownSystemError(f"unknown MemoryBench system {name!r}; known: {', '.join(SYSTEMS)}") from None


def corpus_source(conversation: str) -> str:
    return f"corpus:{conversation}"


def conversation_of(record: MBRecord) -> str | None:
    """The corpus conversation a corpus-dataset question is about: named in ``info``, else the dataset
    itself (each Locomo config and each DialSim script is one conversation); None for other datasets."""
    if not dataset_info(record.dataset).corpus:
        return None
    for key in ("conversation_id", "conversation", "sample_id", "corpus_id"):
        if record.info.get(key) not in (None, ""):
            return str(record.info[key])
    return record.dataset


def corpora_for(records: Sequence[MBRecord], corpus_dir: Path | None, notice) -> dict[str, list[dict]]:
    """The corpus conversations the test cases ask about, from ``corpus_dir/<dataset>.jsonl``."""
    wanted = sorted({c for r in records if (c := conversation_of(r))})
    out: dict[str, list[dict]] = {}
    for name in wanted:
        path = corpus_dir / f"{name}.jsonl" if corpus_dir else None
        if path is None or not path.exists():
            notice(f"no corpus for {name} (looked for {path}); its questions are answered without it")
            continue
        rows = [row for convo in load_corpus(path).values() for row in convo]
        if not rows:
            notice(f"the corpus {path} is empty; {name}'s questions are answered without it")
            continue
        out[name] = rows
    return out


class MemorySystem:
    """One system under test over its own memory DB: learn (corpus, dialogs, feedback), then answer. The graph
    comes opened from the caller (:func:`m3agent.factory.open_memory`, with the user's memory settings); the
    system closes it."""

    def __init__(self, spec: SystemSpec, graph: MemoryGraph, *, top_k: int = 5, lessons: int = 3,
                 max_tokens: int = 512):
        self.spec, self.graph, self.top_k, self.lessons, self.max_tokens = spec, graph, top_k, lessons, max_tokens

    def close(self) -> None:
        self.graph.close()

    # ------------------------------------------------------------------ learning
    def learn_corpus(self, conversation: str, rows: Sequence[dict]) -> int:
        """A corpus conversation as a text source of its own: messages, or whole sessions for S systems."""
        records = [TextRecord(str(r.get("id", i)), " ".join(str(r["text"]).split()),
                              _text(r.get("time")), _text(r.get("speaker")), _text(r.get("session")))
                   for i, r in enumerate(rows)]
        return self.graph.remember(corpus_source(conversation),
                                   _sessions(records) if self.spec.sessions else records).added

    def learn_dialog(self, key: str, dialog: Sequence[dict], lessons: Sequence[str] = ()) -> int:
        """A lived dialog (the question, the answers, the user's replies) and what its feedback taught;
        returns the lines added (0 when it was stored before)."""
        added = 0
        records = [TextRecord(f"{key}#{i}", " ".join(str(turn.get("content", "")).split()),
                              speaker=str(turn.get("role", "user")), session=key)
                   for i, turn in enumerate(dialog) if str(turn.get("content", "")).strip()]
        if records:
            added += self.graph.remember(DIALOGS, _sessions(records) if self.spec.sessions else records).added
        if self.spec.procedural and lessons:
            added += self.graph.remember(DIALOGS, [TextRecord(f"{key}#lesson{i}", text, session=key)
                                                   for i, text in enumerate(lessons)], procedural=True).added
        return added

    # ------------------------------------------------------------------ answering
    def recall(self, record: MBRecord) -> tuple[list[str], list[str]]:
        """The memory lines and the lessons shown for this case."""
        conversation = conversation_of(record)
        sources = [corpus_source(conversation)] if conversation else []
        sources.append(DIALOGS)
        known = {v.name for v in self.graph.videos()}
        question = record.question()
        lines: list[str] = []
        lessons: list[str] = []
        for source in (s for s in sources if s in known):
            found = self.graph.search(question, video=source, lines=self.top_k, retrieval=self.spec.retrieval)
            lines += [hit["text"] for hit in found.lines]
            if self.spec.procedural and source == DIALOGS:
                lessons += self.graph.lessons(self.graph.resolve_video(source).id, question, self.lessons)
        return lines, lessons

    def answer(self, record: MBRecord, chat: ChatModel, history: Sequence[dict] = ()) -> tuple[str, dict]:
        """The system's reply to the case (after ``history``, the dialog so far), and what it recalled."""
        lines, lessons = self.recall(record)
        system = ["You are a helpful assistant with a long-term memory. Use the memories when they are relevant."]
        if lines:
            system.append("Memories:\n" + "\n".join(f"- {line}" for line in lines))
        if lessons:
            system.append("Lessons from earlier feedback of this user:\n" + "\n".join(f"- {line}" for line in lessons))
        messages = [{"role": "system", "content": "\n\n".join(system)}]
        messages += list(record.messages) if record.messages else [{"role": "user", "content": record.question()}]
        messages += list(history)
        reply = chat.chat(messages, max_tokens=self.max_tokens, temperature=0.0)
        return reply.text.strip(), {"memories": len(lines), "lessons": len(lessons),
                                    "tokens": reply.prompt_tokens + reply.completion_tokens}


def _text(value) -> str | None:
    return None if value in (None, "") else " ".join(str(value).split())


def _sessions(records: Sequence[TextRecord]) -> list[TextRecord]:
    """Session-level memory: the records of one session joined into one line (its first id and time)."""
    groups: dict[str, list[TextRecord]] = {}
    for r in records:
        groups.setdefault(r.session or r.id, []).append(r)
    out = []
    for session, items in groups.items():
        text = " ".join((f"{r.speaker}: " if r.speaker else "") + r.text for r in items)
        out.append(TextRecord(f"session:{session}", text, items[0].time, None, session))
    return out
