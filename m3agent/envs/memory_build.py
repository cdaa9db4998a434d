"""The memory-construction task as an environment: build memory from a stream, be scored on later questions.

Each episode starts from an empty memory (a fresh DB in a temporary folder, removed when the episode ends)
and a task ``{"chunks": [...], "questions": [{"question", "answer"}, ...], "id"?}``: chunks are text records
``{"id", "text", "time"?, "speaker"?, "session"?}`` (grouped by session as ``remember`` reads them) or plain
strings (clip descriptions, passages), and the questions are held out: the policy never sees them. Each step
is the policy's reply to one chunk (its tool calls applied, see :mod:`m3agent.memory_tools`); the observation is
the whole conversation, the next chunk last. After the last chunk each question is answered by retrieval
alone (the core block and the best ``answer_lines`` lines, no model) and judged against its answer, and the
episode's reward is (constants in :class:`m3agent.config.MemoryBuildConfig`)::

    accuracy - size_penalty * min(1, memory chars / stream chars) - format_penalty * malformed replies / replies

so a memory that keeps what is asked in few words beats one that keeps nothing or everything. The judge is
the training judge (``train.reward.judge``); with the offline one the reward is deterministic and costs no
model call. Built like every environment, with the text embedder its memories use and the user's memory
settings (``memory``) they are opened with::

    env = factory.build_env(config, "memory-build")   # the configured embedder, or embedder=... to share one
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from m3agent.config import MemoryBuildConfig, MemoryConfig, TrainConfig
from m3agent.envs.base import Env, EnvError, StepResult
from m3agent.eval.annotations import BenchItem
from m3agent.eval.judge import Judge, OfflineJudge
from m3agent.memory.graph import MemoryGraph
from m3agent.memory_tools.policy import Chunk, MemoryBuilder, chunks_of
from m3agent.memory_tools.tools import MemoryTools
from m3agent.models.embed.base import TextEmbedder

SOURCE = "stream"  # the text source an episode's memory is built in


class MemoryBuildEnv(Env):
    name = "memory-build"
    requires = ("embedder", "judge", "memory_config")

    def __init__(self, embedder: TextEmbedder, judge: Judge | None = None, config: MemoryBuildConfig | None = None,
                 workdir: str | None = None, memory_config: MemoryConfig | None = None):
        self.embedder, self.judge = embedder, judge or OfflineJudge()
        self.config = config or MemoryBuildConfig()
        self.memory_config = memory_config or MemoryConfig()  # what each episode's memory is opened with
        self.workdir = workdir  # where episodes' temporary DBs go (None: the system's temporary folder)
        self._messages: list[dict] = []
        self._folder: Path | None = None
        self.graph: MemoryGraph | None = None
        self.builder: MemoryBuilder | None = None
        self.chunks: list[Chunk] = []
        self.questions: list[dict] = []
        self.position = 0  # the chunk the next reply answers
        self.done = False

    @classmethod
    def from_config(cls, config: TrainConfig | MemoryBuildConfig, *, embedder: TextEmbedder,
                    judge: Judge | None = None, memory_config: MemoryConfig | None = None) -> MemoryBuildEnv:
        section = config.memory_build if isinstance(config, TrainConfig) else config
        return cls(embedder, judge, section, memory_config=memory_config)

    @property
    def messages(self) -> list[dict]:
        return self._messages

    # ------------------------------------------------------------------ episode
    def reset(self, task: dict[str, Any]) -> list[dict]:
        """Start on ``task`` (see the module) with an empty memory; the first observation shows chunk 1."""
        chunks, questions = _task(task, self.config.chunk_records)
        self.close()
        self._folder = Path(tempfile.mkdtemp(prefix="m3agent-memory-build-", dir=self.workdir))
        self.graph = MemoryGraph.open(self._folder / "memory.db", self.memory_config, embedder=self.embedder)
        video_id = self.graph.claim_text_source(SOURCE)
        self.builder = MemoryBuilder(MemoryTools(self.graph, video_id, self.config), self.config)
        self.chunks, self.questions, self.position, self.done = chunks, questions, 0, False
        self._messages = [self.builder.system(), self._observe()]
        return self._messages

    def step(self, action: str) -> StepResult:
        """Apply the reply to the current chunk; the next chunk's observation, or after the last chunk the
        episode's reward with its parts in ``info``."""
        if self.builder is None or self.done:
            raise EnvError("call reset(task) first" if self.builder is None else
                           "the episode is over: call reset(task) for the next one")
        text = str(getattr(action, "text", action) or "")
        self._messages.append({"role": "assistant", "content": text})
        results = self.builder.act(text, self.position)
        self.position += 1
        info: dict[str, Any] = {"chunk": self.position, "calls": [r.render() for r in results]}
        if self.position < len(self.chunks):
            self._messages.append(self._observe())
            return StepResult(self._messages, 0.0, False, info)
        self.done = True
        try:
            reward, parts = self._score()
        finally:
            self.close()
        return StepResult(self._messages, reward, True, {**info, **parts})

    def _observe(self) -> dict:
        assert self.builder is not None
        return self.builder.observation(self.chunks[self.position], self.position + 1, len(self.chunks))

    def _score(self) -> tuple[float, dict[str, Any]]:
        cfg, builder = self.config, self.builder
        assert builder is not None
        tools = builder.tools
        items = [BenchItem(str(q.get("id", i)), SOURCE, q["question"], q["answer"]) for i, q in enumerate(self.questions)]
        recalled = [tools.recall(item.question, cfg.answer_lines) for item in items]
        verdicts = self.judge.judge_many(list(zip(items, recalled)))
        correct = sum(v.correct is True for v in verdicts)
        accuracy = correct / len(items)
        size = tools.size()
        stream = sum(len(c.text) for c in self.chunks)
        ratio = min(1.0, size.chars / max(1, stream))
        tally = builder.tally
        malformed = tally.malformed / max(1, tally.replies)
        reward = accuracy - cfg.size_penalty * ratio - cfg.format_penalty * malformed
        return reward, {"accuracy": accuracy, "correct": correct, "questions": len(items),
                        "memory_chars": size.chars, "memory_lines": size.lines, "stream_chars": stream,
                        "size_ratio": ratio, "malformed_share": malformed, "calls": tally.calls,
                        "failed_calls": tally.failed, "recalled": recalled,
                        "verdicts": [v.to_dict() for v in verdicts]}

    def close(self) -> None:
        """Drop the current episode's memory (its DB and folder); harmless when there is none."""
        if self.graph is not None:
            self.graph.close()
            self.graph = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _task(task: object, per_chunk: int) -> tuple[list[Chunk], list[dict]]:
    """The chunks and held-out questions of a task, or an :class:`EnvError` saying what is missing."""
    if not isinstance(task, dict):
        raise EnvError(f"a memory-build task is an object with chunks and questions, got {type(task).__name__}")
    try:
        chunks = chunks_of(task.get("chunks") or [], per_chunk)
    except ValueError as exc:
        raise EnvError(f"memory-build task {task.get('id', '')!r}: {exc}") from exc
    questions = task.get("questions") or []
    if not chunks or not questions:
        raise EnvError(f"memory-build task {task.get('id', '')!r} needs chunks and questions")
    for q in questions:
        if not isinstance(q, dict) or not str(q.get("question") or "").strip() or not str(q.get("answer") or "").strip():
            raise EnvError(f"a held-out question is {{\"question\", \"answer\"}}, got {q!r}")
    return chunks, [{**q, "question": str(q["question"]), "answer": str(q["answer"])} for q in questions]
