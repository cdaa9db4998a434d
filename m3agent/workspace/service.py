"""Everything the app does, without the app: a data folder, its memories, a memorization queue, answers.

``app/`` only lays out widgets and calls these methods, so what the app shows is what the library (and the
CLI: ``memorize --events``, ``characters``, ``timeline``, ``ask --json``) computes. Memories are opened read-only
and shared by every browser tab; a memorization writes them from its own process, and each read picks up
what it committed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from m3agent import factory
from m3agent.config import ChatConfig, Config
from m3agent.errors import M3AgentError
from m3agent.eval.grounding import answer_unfound
from m3agent.files.shelf import Shelf
from m3agent.memory.errors import UnknownEntityError
from m3agent.workspace.folder import DataFolder, DataFolderError

if TYPE_CHECKING:
    from m3agent.memory.graph import MemoryGraph
    from m3agent.models.llm.base import ChatModel

#: the app's settings offer the configured ``control.chat`` (the embedded model unless the config says
#: otherwise) or any OpenAI-compatible server
APP_CHAT_BACKENDS = ("configured", "openai")
SAMPLE_EPISODE = "samples/sample_episode.mp4"


@dataclasses.dataclass(frozen=True)
class ChatChoice:
    """The settings panel's choice; empty fields keep the configured ``control.chat``."""

    backend: str = "configured"
    base_url: str = ""
    model: str = ""

    def apply(self, chat: ChatConfig) -> ChatConfig:
        if self.backend not in APP_CHAT_BACKENDS:
            raise DataFolderError(f"unknown chat backend {self.backend!r} (choose one of {', '.join(APP_CHAT_BACKENDS)})")
        if self.backend == "configured":
            return chat
        if not self.base_url:
            raise DataFolderError("the openai backend needs the server's URL (e.g. http://127.0.0.1:8000/v1)")
        return dataclasses.replace(chat, backend="openai", base_url=self.base_url, model=self.model)


def _node_name(node, kinds: Mapping) -> str:
    """``face_3``/``voice_9`` (a text source's ``speaker_7``) of a node id; ``node N`` for one no longer there."""
    if not isinstance(node, int):
        return str(node)
    kind = kinds.get(node)
    return f"{kind.label}_{node}" if kind is not None else f"node {node}"


def _fix_text(fix: dict, kinds: Mapping) -> str:
    """A correction (as :meth:`MemoryGraph.correct` returns it, or as stored) in words."""
    action, a, b = fix["action"], _node_name(fix.get("a"), kinds), fix.get("b")
    if action in ("rename", "name"):
        return f"{a} is called “{fix.get('value') or b}”"
    if action in ("merge", "same"):
        return f"{a} and {_node_name(b, kinds)} are one person"
    if action in ("not-same", "apart"):
        return f"{a} and {_node_name(b, kinds)} are two people"
    if action == "split":
        clips = fix.get("clips") or fix.get("value")
        if isinstance(clips, (list, tuple)):
            clips = ",".join(str(c) for c in clips)
        where = f" in clips {clips}" if clips not in (None, "") else ""
        text = f"{a}{where} split off as {_node_name(b, kinds)}"
        if fix.get("by") == "memory":  # memorization undid a fold of its own
            text += f" (by the memory{': ' + str(fix['reason']) if fix.get('reason') else ''})"
        return text
    return f"{action} {a} {_node_name(b, kinds) if b is not None else ''}".strip()


class Workspace:
    def __init__(self, config: Config, cli_args: Sequence[str] = (), *, start_queue: bool = True):
        from m3agent.workspace.queue import MemorizationQueue, memorize_command

        self.config = config
        app = config.app
        self.folder = DataFolder(app.data_dir, app.video_types, app.max_upload_mb)
        self.queue = MemorizationQueue(self.folder.state_dir, memorize_command(cli_args), start=start_queue)
        self._lock = threading.Lock()  # opening graphs, loading models
        self._graphs: Shelf[Path, MemoryGraph] = Shelf(self._open_graph, closer=lambda graph: graph.close(),
                                                       lock=self._lock)
        self._chats: Shelf[ChatConfig, ChatModel] = Shelf(lambda chat: factory.build_chat(chat), lock=self._lock)
        self._answering = threading.Lock()  # one chat model call sequence at a time
        self._correcting = threading.Lock()  # one correction at a time (every browser tab shares the memories)
        self._embedder = None

    def close(self) -> None:
        self.queue.close()
        self._graphs.close()

    # ------------------------------------------------------------------ the folder
    def videos(self) -> list[str]:
        return self.folder.videos()

    def memories(self) -> list[str]:
        """Memory DBs of the folder that hold at least one clip (one being started is not listed yet)."""
        return [m for m in self.folder.memories() if self._holds_clips(m)]

    def _holds_clips(self, memory: str) -> bool:
        try:
            graph = self.graph(memory)
            return any(graph.clips(v.id) for v in graph.videos())
        except M3AgentError:
            return False

    def upload(self, temp_path: str, original_name: str | None = None) -> str:
        """Check an upload and keep it in the folder; returns its path relative to the folder."""
        return self.folder.relative(self.folder.accept_upload(temp_path, original_name))

    def memory_of(self, video: str) -> str:
        return self.folder.relative(self._memory_for(self.folder.resolve(video)))

    def _memory_for(self, video: Path) -> Path:
        """``memories/<name>.db``; when that memory is another video's (the same file name in another
        place of the folder), ``memories/<name>-<hash of the video's path>.db``."""
        plain = self.folder.memory_for(video)
        owner = self._owner(plain)
        if owner is None or owner == video:
            return plain
        digest = hashlib.sha256(self.folder.relative(video).encode()).hexdigest()[:8]
        return plain.with_name(f"{plain.stem}-{digest}{plain.suffix}")

    def _owner(self, memory: Path) -> Path | None:
        """The video a memory DB is for: a job's that writes it, else the one it holds."""
        for status in self.queue.statuses():
            if Path(status.job.memory) == memory:
                return Path(status.job.video)
        if not memory.is_file():
            return None
        try:
            videos = self.graph(str(memory)).videos()
        except M3AgentError:
            return None
        return Path(videos[0].path).resolve() if videos and videos[0].path else None

    # ------------------------------------------------------------------ memorizing
    def memorize(self, video: str):
        """Queue a video of the folder for memorization into ``memories/<name>.db``."""
        path = self.folder.resolve(video)
        if not path.is_file():
            raise DataFolderError(f"{video}: no such video in the data folder")
        return self.queue.submit(path, self._memory_for(path))

    def memorize_sample(self):
        """The shipped sample episode: built on first use (inside the job), then memorized."""
        path = self.folder.root / SAMPLE_EPISODE
        return self.queue.submit(path, self.folder.memories_dir / "sample_episode.db", build_sample=True)

    def jobs(self):
        return self.queue.statuses()

    # ------------------------------------------------------------------ reading memories
    @property
    def embedder(self):
        with self._lock:
            if self._embedder is None:
                self._embedder = factory.build_embedder(self.config.embedder)
            return self._embedder

    def graph(self, memory: str):
        """The memory DB at ``memory`` (inside the folder), opened read-only once and shared."""
        path = self.folder.resolve(memory)
        if not path.is_file():
            raise DataFolderError(f"{memory}: no such memory in the data folder")
        graph = self._graphs.get(path)
        graph.refresh()
        return graph

    def _open_graph(self, path: Path) -> MemoryGraph:
        return factory.open_memory(path, self.config, readonly=True)

    def video_file(self, memory: str) -> str | None:
        """The video a memory was made from, if it lies inside the folder (nothing outside is served)."""
        video = self.graph(memory).resolve_video(None)
        if not video.path:
            return None
        try:
            path = self.folder.resolve(video.path)
        except DataFolderError:
            return None
        return str(path) if path.is_file() else None

    def clip_span(self, memory: str, clip: int) -> tuple[float, float] | None:
        graph = self.graph(memory)
        video = graph.resolve_video(None)
        spans = graph.clip_spans(video.id, [clip])
        return spans.get(clip)

    def last_clip(self, memory: str) -> int:
        graph = self.graph(memory)
        clips = graph.clips(graph.resolve_video(None).id)
        return clips[-1].id if clips else 0

    def characters(self, memory: str):
        return self.graph(memory).character_cards()

    # ------------------------------------------------------------------ a person's corrections of who is who
    def correct(self, memory: str, action: str, a: str, b: str) -> dict:
        """Store a correction in the memory (see :meth:`MemoryGraph.correct`): ``merge`` (A and B are one person),
        ``not-same`` (two people, never joined again), ``rename`` (B is A's name) or ``split`` (B names clips,
        ``3,5-7``: A's node there becomes a new node). Returns the graph's answer with ``text``, a sentence
        for the person. The memory is opened for writing only for this; while a memorization writes it,
        this fails with the graph's :class:`~m3agent.memory.locks.WriterBusyError`."""
        action, a, b = str(action or "").strip(), str(a or "").strip(), str(b or "").strip()
        if not a:
            raise UnknownEntityError(f"{action or 'a correction'} needs a character or a node to correct")
        # a split re-embeds the lines whose tags it moves: with the embedder the shared graph already holds
        embedder = self.graph(memory).embedder_required() if action == "split" else None
        with self._writing(memory, embedder) as graph:
            fix = graph.correct(None, action, a, b)
            kinds = graph.characters(graph.resolve_video(None).id).kinds
        return {**fix, "text": _fix_text(fix, kinds)}

    def corrections(self, memory: str) -> list[dict]:
        """The corrections in force, in the order made, each with ``text``: what it does, for a person."""
        graph = self.graph(memory)
        kinds = graph.characters(graph.resolve_video(None).id).kinds
        return [{**fix, "text": _fix_text(fix, kinds)} for fix in graph.corrections(None)]

    def undo_correction(self, memory: str, number: int | str) -> str:
        """Take correction ``number`` back; returns what it had done (its ``text``)."""
        text = str(number).strip()
        if not text.isdigit() or len(text) > 18:
            raise UnknownEntityError(f"no correction {number!r}: give its number")
        done = {fix["id"]: fix["text"] for fix in self.corrections(memory)}
        with self._writing(memory) as graph:
            graph.undo_correction(None, int(text))
        return done.get(int(text), f"correction {text}")

    @contextmanager
    def _writing(self, memory: str, embedder=None):
        """The memory opened for writing for one change, then closed. The shared read-only graph sees the change
        on its next read (its :meth:`MemoryGraph.refresh` drops the cards and characters it derived)."""
        path = self.folder.resolve(memory)
        if not path.is_file():
            raise DataFolderError(f"{memory}: no such memory in the data folder")
        with self._correcting, factory.open_memory(path, self.config, embedder=embedder, create=False) as graph:
            yield graph

    def timeline(self, memory: str, character: int | None = None):
        return self.graph(memory).timeline(character=character)

    def voice_sample(self, memory: str, start: float, end: float) -> tuple[int, np.ndarray] | None:
        """``(16000, int16 samples)`` of the memory's video between ``start`` and ``end`` (at most 15 s)."""
        from m3agent.media import audio_excerpt
        from m3agent.media.clips import SAMPLE_RATE

        video = self.video_file(memory)
        if video is None:
            return None
        samples = audio_excerpt(video, start, min(end, start + 15.0))
        pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype(np.int16)
        return (SAMPLE_RATE, pcm) if pcm.size else None

    # ------------------------------------------------------------------ answering
    def chat(self, choice: ChatChoice):
        return self._chats.get(choice.apply(self.config.control.chat))

    def ask(self, memory: str, question: str, before_clip: int | None = None,
            choice: ChatChoice = ChatChoice()) -> dict:
        """An answer from the control process: ``{"answer", "rounds": [...], "evidence": [...], "seconds"}``;
        each round has its query and the clips it returned (times, scores), each evidence clip its best line."""
        from m3agent.control import Question
        from m3agent.control.evidence import best_evidence

        graph = self.graph(memory)
        asked = Question(question, before_clip)
        chat = self.chat(choice)
        controller = factory.build_controller(graph, self.config, chat=chat)
        started = time.perf_counter()
        with self._answering:  # a video memory cannot answer about raises; a model failure is the answer's error
            answer = controller.answer(asked, raise_failure=False)
        data = answer.to_dict()
        data["question"] = question
        data["evidence"] = best_evidence(answer, graph.embed_queries, limit=3)
        data["unfound"] = answer_unfound(answer)  # words of the answer no note shown holds: say so beside it
        data["seconds"] = round(time.perf_counter() - started, 2)
        return data
