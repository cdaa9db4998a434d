"""Memorizer SFT data: a teacher VLM describes every clip of some videos; each clip becomes one chat record.

    python pipelines/sft/teacher.py a.mp4 b.mp4 --out sft.jsonl \\
        --set memorize.chat.backend=openai --set memorize.chat.base_url=http://gpu-node:8000/v1 \\
        --set memorize.chat.model=Qwen/Qwen2.5-VL-72B-Instruct

Each video goes through the project's memorization pipeline: perception (faces, voices, speech) with its
identities kept across clips in a memory DB beside ``--out`` (``--memory-dir``), and a memorizer that asks the
teacher (``memorize.chat``, any chat backend) exactly what the chat memorizer asks
(:mod:`m3agent.memorize.chat`: each shot's key frame, then evenly spaced frames, one crop per face tag, the
tagged transcript, and the text OCR read on screen with the scene changes) and checks the reply the same way (one JSON object; lines naming a tag the clip lacks are dropped). A record holds that question and
the checked answer, in the memorizer's target format::

    {"id": "<video fingerprint>:<clip>", "video", "clip", "start", "end", "teacher",
     "messages": [{"role": "user", "content": [text and image parts]},
                  {"role": "assistant", "content": "{\\"episodic\\": [...], \\"semantic\\": [...]}"}]}

It is resumable: a record is synced to disk before its clip is committed to the DB, a run skips the clips
whose id is already in ``--out`` (a torn last line is dropped, see :mod:`m3agent.files.resumable`), and the DB
resumes at its first missing clip. A clip the teacher fails on (after ``memorize.chat_retries``) gets the
grounded lines in the DB and no record; the summary counts them. ``--text-only`` keeps the text prompt and
drops the images (data for a text-only memorizer).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from m3agent.config import Config, load_config
from m3agent.errors import M3AgentError
from m3agent.files.resumable import Appender, ResultsFile, ResultsFileError
from m3agent.media.fingerprint import content_fingerprint
from m3agent.memorize.base import Memorizer, MemoryLines
from m3agent.memorize.chat import ChatMemorizer
from m3agent.memorize.grounded import GroundedMemorizer
from m3agent.models.llm.base import ChatModel, ChatResponse, Generation, Message, text_only
from m3agent.perception.pipeline import ClipPerception

RECORD_KEYS = ("video", "clip", "messages")


class TeacherError(M3AgentError):
    """A teacher run that cannot start as configured."""


class RecordingChat(ChatModel):
    """The teacher behind the chat contract, keeping the conversations it was sent (the record's question)."""

    def __init__(self, inner: ChatModel):
        self.inner, self.name = inner, inner.name
        self.supports_images = inner.supports_images
        self.retries = 0  # the inner model retries
        self.sent: list[list[Message]] = []

    def chat(self, messages: Sequence[Message], **kwargs) -> ChatResponse:
        self.sent.append(list(messages))
        return self.inner.chat(messages, **kwargs)

    def _complete(self, messages: Sequence[Message], params: Generation) -> ChatResponse:
        return self.inner._complete(messages, params)  # pragma: no cover - chat() is the path used


@dataclass
class TeachReport:
    video: str
    written: int = 0  # records this run wrote
    skipped: int = 0  # clips whose record an earlier run wrote
    failed: int = 0  # clips the teacher gave no usable reply for (no record)
    empty: int = 0  # clips with no picture and no speech (a file's last milliseconds): nothing to ask about

    def to_dict(self) -> dict:
        return {"video": self.video, "records_written": self.written, "already_written": self.skipped,
                "teacher_failed": self.failed, "empty_clips": self.empty}


class TeacherMemorizer(Memorizer):
    """Asks the teacher as the chat memorizer does, writes each clip's record, and gives the DB the teacher's
    lines with the perception-grounded semantics (equivalences, stated names) that keep characters whole."""

    name = "teacher"

    def __init__(self, teacher: ChatModel, out: Appender, done: set[str], fingerprint: str, video: str, *,
                 retries: int = 1, text_only: bool = False, label: str = ""):
        self.recorder = RecordingChat(teacher)
        self.asker = ChatMemorizer(self.recorder, retries=retries, keep_grounded_semantics=False)
        self.grounded = GroundedMemorizer()
        self.out, self.done, self.fingerprint, self.text_only = out, done, fingerprint, text_only
        self.label = label or teacher.name
        self.report = TeachReport(video)

    def describe(self, perception: ClipPerception, face_ids: list[int], voice_ids: list[int]) -> MemoryLines:
        clip = perception.clip
        key = f"{self.fingerprint}:{clip.index}"
        grounded = self.grounded.describe(perception, face_ids, voice_ids)
        if key in self.done:  # written before the DB lost or never got this clip: no second teacher call
            self.report.skipped += 1
            return grounded
        if not clip.frames and not perception.utterances:
            self.report.empty += 1
            return grounded
        self.recorder.sent.clear()
        failures = self.asker.fallbacks
        lines = self.asker.describe(perception, face_ids, voice_ids)
        if self.asker.fallbacks > failures or not self.recorder.sent:
            self.report.failed += 1
            return lines
        question = self.recorder.sent[0]
        if self.text_only:
            question = text_only(question)
        answer = json.dumps({"episodic": lines.episodic, "semantic": lines.semantic}, ensure_ascii=False)
        self.out.write({"id": key, "video": self.report.video, "clip": clip.index, "start": clip.start,
                        "end": clip.end, "teacher": self.label,
                        "messages": [*question, {"role": "assistant", "content": answer}]})
        self.done.add(key)
        self.report.written += 1
        return MemoryLines(lines.episodic, lines.semantic + [s for s in grounded.semantic if s not in lines.semantic])


def records_file(path: str | os.PathLike[str]) -> ResultsFile:
    return ResultsFile(path, RECORD_KEYS, "pipelines/sft/teacher.py")


def teach_video(path: str | os.PathLike[str], out: Path, graph, perceiver, teacher: ChatModel, config: Config, *,
                done: set[str], text_only: bool = False, progress: bool = False) -> TeachReport:
    """One video's clips through perception and the teacher, records appended to ``out``."""
    from m3agent.memorize import memorize_video

    name = Path(path).name
    with records_file(out).appender() as appender:
        memorizer = TeacherMemorizer(teacher, appender, done, content_fingerprint(path), name,
                                     retries=config.memorize.chat_retries, text_only=text_only,
                                     label=_label(config))
        memorize_video(path, graph, perceiver, memorizer, config.memorize, progress=progress)
    return memorizer.report


def _label(config: Config) -> str:
    chat = config.memorize.chat
    return f"{chat.backend}:{chat.model}" if chat.model else chat.backend


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Teacher VLM over clips -> memorizer SFT records (JSON lines).")
    parser.add_argument("videos", nargs="+")
    parser.add_argument("--out", required=True, help="JSON-lines records (appended; a re-run resumes)")
    parser.add_argument("--memory-dir", default=None, help="one memory DB per video (default: beside --out)")
    parser.add_argument("--text-only", action="store_true", help="drop images from the records' questions")
    parser.add_argument("--config", help="TOML config file")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        reports = run(args)
    except M3AgentError as exc:
        print(f"teacher: {exc}", file=sys.stderr)
        return exc.exit_code
    print(json.dumps([r.to_dict() for r in reports], indent=2))
    return 0


def run(args) -> list[TeachReport]:
    from m3agent import factory

    config = load_config(args.config, os.environ, args.overrides)
    if config.memorize.chat.backend in ("", "auto"):
        raise TeacherError("the teacher is memorize.chat: set memorize.chat.backend (e.g. openai with "
                           "memorize.chat.base_url of a vLLM server running a VLM)")
    out = Path(args.out)
    done = set(records_file(out).load())  # drops a torn last line; a foreign file is refused untouched
    memory_dir = Path(args.memory_dir) if args.memory_dir else out.parent / f"{out.stem}.memories"
    teacher = factory.build_chat(config.memorize.chat)
    perceiver = factory.build_perceiver(config.memorize.perception)
    embedder = factory.build_embedder(config.embedder)
    reports = []
    for video in args.videos:
        db = memory_dir / f"{Path(video).stem}-{content_fingerprint(video)[:12]}.db"
        with factory.open_memory(db, config, embedder=embedder, create=True) as graph:
            reports.append(teach_video(video, out, graph, perceiver, teacher, config, done=done,
                                       text_only=args.text_only, progress=not args.quiet))
    return reports


__all__ = ["RecordingChat", "ResultsFileError", "TeachReport", "TeacherMemorizer", "main", "records_file",
           "teach_video"]

if __name__ == "__main__":
    sys.exit(main())
