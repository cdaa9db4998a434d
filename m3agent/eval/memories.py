"""Where a benchmark video's memory is: our DB, an M3-Agent pickle to convert, or a video to memorize first.

For video ``V`` (annotation ``mem_path`` ``.../M.pkl``, ``video_path`` ``.../F.mp4``) in the memories folder:
``V.db``, else ``M.pkl`` or ``V.pkl`` (M3-Agent's released graphs, converted once through the restricted
importer into ``V.db`` under the run's own folder), else, given a videos folder, ``F.mp4`` or ``V.<ext>``
there, memorized into ``V.db`` in the memories folder. Nothing found is a reason naming every place looked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".mov", ".avi", ".m4v")


@dataclass(frozen=True)
class MemoryPlan:
    video: str  # the annotation's video key
    db: Path | None = None  # our memory DB (to open, to convert into, or to memorize into)
    pickle: Path | None = None  # an M3-Agent graph to convert into ``db`` first
    video_file: Path | None = None  # a video to memorize into ``db`` first (resumes a partial memory)
    problem: str = ""  # why there is no memory

    @property
    def found(self) -> bool:
        return not self.problem


def _name(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).name if path else ""


def plan_memory(video: str, memories: str | Path, converted: str | Path, *, mem_path: str = "",
                video_path: str = "", videos: str | Path | None = None) -> MemoryPlan:
    memories, converted = Path(memories), Path(converted)
    safe = _safe(video)
    looked = []
    db = memories / f"{safe}.db"
    looked.append(db.name)
    pickles = [memories / n for n in dict.fromkeys(filter(None, [_name(mem_path), f"{safe}.pkl"]))]
    looked += [p.name for p in pickles]
    if videos is not None:
        candidates = [Path(videos) / n for n in dict.fromkeys(
            filter(None, [_name(video_path)] + [safe + s for s in VIDEO_SUFFIXES]))]
        found = next((c for c in candidates if c.is_file()), None)
        if found is not None:  # memorize (or finish memorizing) it, even beside an existing DB
            return MemoryPlan(video, db, video_file=found)
    if db.is_file():
        return MemoryPlan(video, db)
    pickle = next((p for p in pickles if p.is_file()), None)
    if pickle is not None:
        return MemoryPlan(video, converted / f"{safe}.db", pickle=pickle)
    where = f"no memory for video {video!r} in {memories} (looked for {', '.join(looked)})"
    if videos is None:
        return MemoryPlan(video, problem=where + "; pass --videos DIR to memorize it first")
    names = ", ".join(c.name for c in candidates[:3]) + (", ..." if len(candidates) > 3 else "")
    return MemoryPlan(video, problem=f"{where}, and no video file in {videos} (looked for {names})")


def _safe(video: str) -> str:
    """The video key as a file name: path separators and leading dots cannot leave the folder."""
    name = "".join(c if c.isalnum() or c in "-_.() " else "_" for c in str(video)).strip().lstrip(".")
    return name or "video"
