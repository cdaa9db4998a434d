"""Benchmark questions from annotation files: M3-Bench (``robot.json``, ``web.json``) and VideoMME-style
multiple choice, read into one :class:`BenchItem` shape the harness asks and the report counts.

M3-Bench is ``{video_id: {video_path, mem_path, qa_list: [{question, answer, question_id, reasoning,
timestamp "MM:SS", type: [...], before_clip}]}}`` (web adds ``video_url`` and has no timestamps). The robot
file says "Multi-Detail Reasoning" for what the paper and the web file call "Multi-Evidence Reasoning"; it is
counted as the latter. A question asked at ``timestamp`` may see only the clips finished by then:
``before_clip = floor(seconds / clip_seconds) - 1``. The file cannot know the clip length of the memory a
question is asked of: it is read with the configured one (30 s by default), and whoever opens the video's
memory counts again with the length stored there (:func:`timed`). A question counts for each of its types.

VideoMME is a list (JSON, JSON lines or Parquet) of ``{question_id, videoID | video_id, question, options:
["A. ...", ...] | {"A": ...}, answer: "A", task_type, duration}``; it is scored by the letter chosen.

Where an annotation says which clips hold the evidence, a sidecar ``NAME.evidence.json`` beside the file
(``{question_id: [clip, ...]}``) gives them; the report then counts how often a search reached one.
A single bad question is kept with its ``problem`` (the harness reports it and goes on); a file that
cannot be read at all is an :class:`AnnotationError`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

from m3agent.config import DEFAULT_CLIP_SECONDS
from m3agent.errors import M3AgentError
from m3agent.files.jsonl import LineError, json_lines, loads, read_text

MULTI_EVIDENCE = "Multi-Evidence Reasoning"
TYPE_ALIASES = {"Multi-Detail Reasoning": MULTI_EVIDENCE}
M3_TYPES = (MULTI_EVIDENCE, "Multi-Hop Reasoning", "Cross-Modal Reasoning", "Person Understanding",
            "General Knowledge Extraction")
LETTERS = "ABCDEFGH"


class AnnotationError(M3AgentError, ValueError):
    """An annotation file that cannot be read as benchmark questions (the message names the file and why)."""


@dataclass(frozen=True)
class BenchItem:
    id: str
    video: str  # the video's key in the annotation file
    question: str
    reference: str  # the ground-truth answer (multiple choice: its letter)
    types: tuple[str, ...] = ()
    before_clip: int | None = None  # the last clip the question may see (None: all)
    timestamp: str | None = None
    evidence: tuple[int, ...] = ()  # clips holding the evidence, where known
    options: tuple[str, ...] = ()  # multiple choice: "A. ...", "B. ...", ...
    duration: str = ""  # VideoMME: short, medium or long (the paper's VideoMME-long is the long ones)
    video_path: str = ""  # as the annotation names them (the harness looks for their file names)
    mem_path: str = ""
    problem: str = ""  # why it cannot be asked as written; the harness records this as its error

    @property
    def multiple_choice(self) -> bool:
        return bool(self.options)


def normalize_type(name: str) -> str:
    name = " ".join(str(name).split())
    return TYPE_ALIASES.get(name, name)


def timestamp_seconds(text: str) -> float:
    """``"MM:SS"`` or ``"HH:MM:SS"`` (seconds may have a fraction) as seconds."""
    parts = str(text).strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"\d+(\.\d+)?", p) for p in parts):
        raise ValueError(f"timestamp {text!r} is not MM:SS or HH:MM:SS")
    return sum(float(p) * 60**i for i, p in enumerate(reversed(parts)))


def before_clip_at(seconds: float, clip_seconds: float = DEFAULT_CLIP_SECONDS) -> int:
    """The last clip finished at ``seconds`` into the video (-1: none yet)."""
    return math.floor(seconds / clip_seconds) - 1


def _early(timestamp: str, clip_seconds: float | None = None) -> str:
    """The problem of a question asked before the first clip ends (without ``clip_seconds``: its start)."""
    if clip_seconds is None:
        return f"asked at {timestamp}, before the first "
    return (f"asked at {timestamp}, before the first {clip_seconds:g}-second clip ends: "
            "there is no memory yet to answer from")


def _timing(timestamp: str, clip_seconds: float) -> tuple[int | None, str]:
    """``before_clip`` of a question asked at ``timestamp`` in clips of ``clip_seconds``, and its problem ("":
    none)."""
    try:
        before_clip = before_clip_at(timestamp_seconds(timestamp), clip_seconds)
    except ValueError as exc:
        return None, str(exc)
    return before_clip, _early(timestamp, clip_seconds) if before_clip < 0 else ""


def asked_early(item: BenchItem) -> bool:
    """Whether the item's only problem is being asked before the first clip ends: that depends on the clip
    length of the memory it is asked of, so it is decided again by :func:`timed`."""
    return bool(item.timestamp) and item.before_clip is not None and item.before_clip < 0 and \
        item.problem.startswith(_early(item.timestamp)) and "; " not in item.problem


def timed(item: BenchItem, clip_seconds: float) -> BenchItem:
    """``item`` as asked of a memory cut into clips of ``clip_seconds`` (the length the video's memory stores):
    ``before_clip`` counted again from its timestamp, and the problem of a question asked before the first
    clip ends set again. An item without a timestamp (its ``before_clip`` given as a clip number, or none) or
    with an unreadable one comes back as it is."""
    if not item.timestamp:
        return item
    before_clip, early = _timing(item.timestamp, clip_seconds)
    if before_clip is None:
        return item
    problems = [p for p in item.problem.split("; ") if p and not p.startswith(_early(item.timestamp))]
    problem = "; ".join(problems + ([early] if early else []))
    if (before_clip, problem) == (item.before_clip, item.problem):
        return item
    return replace(item, before_clip=before_clip, problem=problem)


def read_annotations(path: str | Path, *, fmt: str = "auto", evidence: str | Path | None = None,
                     clip_seconds: float = DEFAULT_CLIP_SECONDS) -> list[BenchItem]:
    """Every question of an M3-Bench or VideoMME file, in file order. ``fmt``: auto, m3bench or videomme.
    ``clip_seconds``: the clip length ``before_clip`` is counted in until a memory says otherwise (:func:`timed`)."""
    path = Path(path)
    data = _load(path)
    if fmt == "auto":
        fmt = "m3bench" if isinstance(data, dict) else "videomme"
    if fmt == "m3bench":
        items = _m3bench(path, data, clip_seconds)
    elif fmt == "videomme":
        items = _videomme(path, data)
    else:
        raise AnnotationError(f"unknown annotation format {fmt!r} (auto, m3bench or videomme)")
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise AnnotationError(f"{path}: question id {item.id!r} appears twice")
        seen.add(item.id)
    return _with_evidence(items, _evidence(path, evidence))


def _load(path: Path):
    if path.suffix == ".parquet":
        try:
            import pandas

            return pandas.read_parquet(path).to_dict("records")
        except OSError as exc:
            raise AnnotationError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except Exception as exc:  # pandas/pyarrow on a file that is not Parquet
            raise AnnotationError(f"cannot read {path} as Parquet: {exc}") from exc
    text = read_text(path, error=AnnotationError)  # UTF-8 or UTF-16 with a BOM, bounded, text only
    try:
        return loads(text)
    except LineError:
        pass
    message = "{source}:{number}: neither a JSON file nor JSON lines: {msg}"
    return [record for _, record in json_lines(text, path, error=AnnotationError, message=message)]


def _m3bench(path: Path, data: dict, clip_seconds: float) -> list[BenchItem]:
    items = []
    for video, entry in data.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("qa_list"), list):
            raise AnnotationError(f"{path}: video {video!r} has no qa_list; not an M3-Bench annotation file")
        for index, qa in enumerate(entry["qa_list"], 1):
            if not isinstance(qa, dict):
                raise AnnotationError(f"{path}: video {video!r}, question {index} is not an object")
            items.append(_m3_item(video, entry, qa, index, clip_seconds))
    return items


def _m3_item(video: str, entry: dict, qa: dict, index: int, clip_seconds: float) -> BenchItem:
    problems = []
    question, reference = str(qa.get("question") or "").strip(), str(qa.get("answer") or "").strip()
    if not question:
        problems.append("the annotation has no question text")
    if not reference:
        problems.append("the annotation has no ground-truth answer")
    types = qa.get("type") or []
    types = tuple(normalize_type(t) for t in ([types] if isinstance(types, str) else types))
    timestamp, before_clip = qa.get("timestamp") or None, qa.get("before_clip")
    if timestamp:
        before_clip, problem = _timing(timestamp, clip_seconds)
        if problem:
            problems.append(problem)
    elif before_clip is not None and (isinstance(before_clip, bool) or not isinstance(before_clip, int)
                                      or before_clip < 0):
        problems.append(f"before_clip {before_clip!r} is not a clip number")
        before_clip = None
    return BenchItem(str(qa.get("question_id") or f"{video}_Q{index:02d}"), str(video), question, reference,
                     types, before_clip, timestamp, video_path=str(entry.get("video_path") or ""),
                     mem_path=str(entry.get("mem_path") or ""), problem="; ".join(problems))


def _videomme(path: Path, data) -> list[BenchItem]:
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), None)
    if not isinstance(data, list):
        raise AnnotationError(f"{path}: neither M3-Bench ({{video: {{qa_list}}}}) nor a list of VideoMME questions")
    items = []
    for index, record in enumerate(data, 1):
        if not isinstance(record, dict):
            raise AnnotationError(f"{path}: question {index} is not an object")
        items.append(_mc_item(record, index))
    return items


def _mc_item(record: dict, index: int) -> BenchItem:
    problems = []
    video = str(record.get("videoID") or record.get("video_id") or record.get("video") or "")
    if not video:
        problems.append("no video id (videoID or video_id)")
    options = _options(record.get("options"))
    if len(options) < 2:
        problems.append("fewer than two options")
    answer = str(record.get("answer") or "").strip().upper().rstrip(".")
    if answer not in LETTERS[:len(options)]:
        problems.append(f"answer {record.get('answer')!r} is not one of the option letters")
    question = str(record.get("question") or "").strip()
    if not question:
        problems.append("no question text")
    types = tuple(str(record[k]) for k in ("task_type",) if record.get(k))
    return BenchItem(str(record.get("question_id") or f"{video}-{index}"), video, question, answer, types,
                     options=options, duration=str(record.get("duration") or ""), problem="; ".join(problems))


def _options(raw) -> tuple[str, ...]:
    """Options as ``"A. text"`` lines, whether given as such, as bare texts, or as ``{"A": text}``."""
    if isinstance(raw, dict):
        return tuple(f"{k}. {v}" for k, v in sorted(raw.items()))
    if raw is None or isinstance(raw, str):
        return ()
    out = []
    for letter, text in zip(LETTERS, list(raw)):
        text = str(text).strip()
        out.append(text if re.match(rf"^{letter}[.)]\s", text) else f"{letter}. {text}")
    return tuple(out)


def _evidence(path: Path, evidence: str | Path | None) -> dict[str, list[int]]:
    sidecar = Path(evidence) if evidence else path.with_suffix(".evidence.json")
    if not sidecar.exists():
        if evidence:
            raise AnnotationError(f"evidence file {sidecar} does not exist")
        return {}
    text = read_text(sidecar, error=AnnotationError, unreadable="cannot read evidence file {source}: {reason}")
    try:
        data = loads(text)
    except LineError as exc:
        raise AnnotationError(f"cannot read evidence file {sidecar}: not JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or not all(isinstance(v, list) and all(isinstance(c, int) for c in v)
                                             for v in data.values()):
        raise AnnotationError(f"{sidecar}: expected {{question_id: [clip, ...]}}")
    return data


def _with_evidence(items: list[BenchItem], evidence: dict[str, list[int]]) -> list[BenchItem]:
    if not evidence:
        return items
    return [replace(item, evidence=tuple(evidence[item.id])) if item.id in evidence else item for item in items]
