"""A memorizer that asks a chat model (a VLM such as Qwen2.5-VL/-Omni or GPT-4o) to describe a clip.

It sends the clip's key frames (each shot's first frame, topped up with evenly spaced ones), one crop per face
tag, the tagged transcript and the on-screen text read by OCR, and expects a JSON
object of episodic and semantic lines. Output is checked: lines naming tags the clip does not have
are dropped; unparsable output is retried with a correction, then the clip falls back to the
grounded memorizer, so a model that answers garbage never loses a clip. Perception-grounded
semantics (equivalences, stated names) are kept alongside the model's lines by default, and so are the
on-screen text and scene-change lines (what OCR read is a fact of the clip, whatever the model makes of it).
"""

from __future__ import annotations

import logging
import re

from m3agent.files.jsonl import LineError, loads
from m3agent.media.clock import clock
from m3agent.media.jpeg import encode_jpeg
from m3agent.memorize.base import Memorizer, MemoryLines
from m3agent.memorize.grounded import GroundedMemorizer
from m3agent.memorize.on_screen import on_screen_lines
from m3agent.memory.tags import parse_tags
from m3agent.models.llm.base import ChatModel, answer_text, image_part, text_part
from m3agent.perception.pipeline import ClipPerception
from m3agent.prompts import load_prompt

log = logging.getLogger(__name__)
_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


def parse_memory_json(text: str) -> MemoryLines | None:
    """``{"episodic": [...], "semantic": [...]}`` from a reply, or None when there is none."""
    match = _JSON_OBJECT.search(answer_text(text))
    if not match:
        return None
    try:
        data = loads(match.group(0))  # a lone surrogate in a model's JSON is no line memory can store
    except LineError:
        return None
    if not isinstance(data, dict):
        return None
    lines = MemoryLines()
    for key in ("episodic", "semantic"):
        items = data.get(key, [])
        if not isinstance(items, list):
            return None
        getattr(lines, key).extend(" ".join(str(x).split()) for x in items if isinstance(x, str | int | float))
    if not lines.episodic and not lines.semantic:
        return None
    return lines


class ChatMemorizer(Memorizer):
    name = "chat"
    requires = ("chat",)

    @classmethod
    def from_config(cls, config, chat: ChatModel) -> ChatMemorizer:
        return cls(chat, retries=config.chat_retries)

    def __init__(self, chat: ChatModel, *, frames: int = 8, image_side: int = 448, retries: int = 1,
                 keep_grounded_semantics: bool = True, max_tokens: int = 1024,
                 fallback: Memorizer | None = None):
        self.chat, self.frames, self.image_side, self.retries = chat, frames, image_side, retries
        self.keep_grounded_semantics, self.max_tokens = keep_grounded_semantics, max_tokens
        self.fallback = fallback or GroundedMemorizer()
        self.fallbacks = 0

    def _messages(self, perception: ClipPerception, face_ids: list[int], voice_ids: list[int]) -> list[dict]:
        clip = perception.clip
        images = self.chat.supports_images
        face_lines = []
        parts: list[dict] = []
        for track, node in zip(perception.faces, face_ids):
            spans = ", ".join(f"{clock(a)}-{clock(b)}" for a, b in track.spans(gap=2.0))
            face_lines.append(f"<face_{node}> on screen {spans}")
        for a, b, n in perception.small_face_spans(gap=2.0):
            face_lines.append(f"{n} {'face' if n == 1 else 'faces'} too small to identify (no tag) on screen "
                              f"{clock(a)}-{clock(b)}")
        speech = [
            f"{'<voice_' + str(voice_ids[u.voice]) + '>' if u.voice is not None else 'unknown voice'} "
            f"[{clock(u.start)}-{clock(u.end)}]: {u.text}"
            for u in perception.utterances
        ]
        prompt = load_prompt("memorize_clip").format(
            start=clock(clip.start), end=clock(clip.end), faces="\n".join(face_lines) or "(no face detected)",
            speech="\n".join(speech) or "(no speech)", screen="\n".join(on_screen_lines(perception)) or "(none)")
        parts.append(text_part(prompt))
        if images:
            for track, node in zip(perception.faces, face_ids):
                best = max(track.detections, key=lambda d: d.score)
                parts += [text_part(f"<face_{node}>:"), image_part(encode_jpeg(best.crop, 80, max_side=160))]
            if clip.frames:
                parts.append(text_part("Frames of the clip, in order, with their times:"))
                for i in self.frames_to_send(perception):
                    parts += [text_part(clock(clip.frame_times[i])),
                              image_part(encode_jpeg(clip.frames[i], 80, max_side=self.image_side))]
        return [{"role": "user", "content": parts if images else prompt}]

    def frames_to_send(self, perception: ClipPerception) -> list[int]:
        """Indices of the frames sent: every key frame (up to ``frames``), then evenly spaced ones, in order."""
        count = len(perception.clip.frames)
        chosen = list(dict.fromkeys(i for i in perception.key_frames if i < count))[: self.frames]
        step = max(1, count // self.frames)
        for i in range(0, count, step):
            if len(chosen) >= min(self.frames, count):
                break
            if i not in chosen:
                chosen.append(i)
        return sorted(chosen)

    def describe(self, perception: ClipPerception, face_ids: list[int], voice_ids: list[int]) -> MemoryLines:
        known = {("face", n) for n in face_ids} | {("voice", n) for n in voice_ids}
        messages = self._messages(perception, face_ids, voice_ids)
        lines = None
        for _ in range(self.retries + 1):
            try:
                reply = self.chat.chat(messages, max_tokens=self.max_tokens, temperature=0.0)
            except Exception as exc:  # a failing server must not lose the clip
                log.warning("chat memorizer: clip %d: model call failed: %s", perception.clip.index, exc)
                break
            lines = parse_memory_json(reply.text)
            if lines is not None:
                break
            messages = messages + [
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": "That was not one JSON object with \"episodic\" and \"semantic\" "
                                            "lists of strings. Reply with only that JSON object."},
            ]
        grounded = self.fallback.describe(perception, face_ids, voice_ids)
        if lines is None:
            self.fallbacks += 1
            log.warning("chat memorizer: clip %d: no usable output; using grounded memory", perception.clip.index)
            return grounded
        out = MemoryLines(
            [t for t in lines.episodic if _tags_known(t, known)],
            [t for t in lines.semantic if _tags_known(t, known)],
        )
        if self.keep_grounded_semantics:
            out.semantic += [t for t in grounded.semantic if t not in out.semantic]
        if not out.episodic:  # the model named only unknown tags: keep the clip's grounded events
            out.episodic = grounded.episodic
        out.episodic += [t for t in on_screen_lines(perception) if t not in out.episodic]
        return out


def _tags_known(text: str, known: set[tuple[str, int]]) -> bool:
    return all(kind == "character" or (kind, n) in known for kind, n in parse_tags(text)) and bool(text.strip())
