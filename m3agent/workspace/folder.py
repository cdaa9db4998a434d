"""The one folder the app reads: its videos, uploads and memory DBs; of these it serves only the videos.

Every path the app touches comes from a person (a dropdown value, an upload's name, a DB's recorded
video path) and goes through :meth:`DataFolder.resolve`, which refuses anything outside the folder after
symlinks are followed. An upload is kept only when its name ends like a video, it is within the size
limit, and the decoder finds a picture stream in it.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from m3agent.errors import M3AgentError
from m3agent.files.digest import file_digest
from m3agent.files.private import private_dir

MEMORY_SUFFIX = ".db"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class DataFolderError(M3AgentError, ValueError):
    """A path outside the data folder, or an upload that is not a video the app can memorize."""


class DataFolder:
    """``root/``: videos anywhere in it, ``uploads/`` for what people upload, ``memories/`` for one
    memory DB per video, ``.app/`` for the app's own state (the memorization queue)."""

    def __init__(self, root: str | os.PathLike[str], video_types: str | list[str] = ".mp4",
                 max_upload_mb: int = 2048):
        self.root = private_dir(root).resolve()
        types = video_types.split() if isinstance(video_types, str) else list(video_types)
        self.video_types = tuple(t.lower() if t.startswith(".") else f".{t.lower()}" for t in types)
        self.max_upload_bytes = int(max_upload_mb) * 1024 * 1024

    @property
    def uploads(self) -> Path:
        return private_dir(self.root / "uploads")

    @property
    def memories_dir(self) -> Path:
        return private_dir(self.root / "memories")

    @property
    def state_dir(self) -> Path:
        return private_dir(self.root / ".app")

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """``path`` (relative to the folder, or absolute) as a real path inside it; anything else is refused."""
        text = os.fspath(path)
        if not text or "\x00" in text:
            raise DataFolderError("no path given" if not text else "a path may not contain NUL")
        candidate = Path(text) if os.path.isabs(text) else self.root / text
        try:
            real = candidate.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise DataFolderError(f"{text}: {exc}") from exc
        if real != self.root and self.root not in real.parents:
            raise DataFolderError(f"{text} is outside the data folder {self.root}")
        return real

    def holds_video(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is a video :meth:`videos` would list, once symlinks are followed: the only files
        of the folder the app serves (never a memory DB, its WAL, vectors, lock or log, nor ``.app/``)."""
        return listed_file(self.root, path, self.video_types)

    def relative(self, path: str | os.PathLike[str]) -> str:
        return self.resolve(path).relative_to(self.root).as_posix()

    def _listed(self, suffixes: tuple[str, ...]) -> list[str]:
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.lower().endswith(suffixes) and not name.startswith("."):
                    found.append((Path(dirpath) / name).relative_to(self.root).as_posix())
        return found

    def videos(self) -> list[str]:
        """Videos in the folder, relative paths, sorted."""
        return self._listed(self.video_types)

    def memories(self) -> list[str]:
        """Memory DBs in the folder, relative paths, sorted."""
        return self._listed((MEMORY_SUFFIX,))

    def memory_for(self, video: str | os.PathLike[str]) -> Path:
        """The memory DB a video is memorized into: ``memories/<its name>.db``."""
        return self.memories_dir / f"{self.resolve(video).stem}{MEMORY_SUFFIX}"

    def accept_upload(self, temp_path: str | os.PathLike[str], original_name: str | None = None) -> Path:
        """Check an uploaded file and move it into ``uploads/``; the same content uploaded twice is kept
        once. Raises :class:`DataFolderError` with a message for the person who uploaded it."""
        from m3agent.media import MediaError, probe

        temp = Path(temp_path)
        name = Path(original_name or temp.name).name
        if not name.lower().endswith(self.video_types):
            raise DataFolderError(f"{name}: not a video file name (accepted: {' '.join(self.video_types)})")
        size = temp.stat().st_size
        if size > self.max_upload_bytes:
            raise DataFolderError(f"{name} is {size / 2**20:.0f} MB; the limit is {self.max_upload_bytes // 2**20} MB "
                                  "(app.max_upload_mb)")
        if size == 0:
            raise DataFolderError(f"{name} is empty")
        try:
            info = probe(temp)
        except MediaError as exc:
            raise DataFolderError(f"{name} is not a video the decoder can read: {exc}") from exc
        if not info.has_video:
            raise DataFolderError(f"{name} has no picture stream: upload a video")
        digest = file_digest(temp)
        stem, suffix = Path(_SAFE_NAME.sub("_", name)).stem.strip("._") or "video", Path(name).suffix.lower()
        for existing in self.uploads.glob(f"*{suffix}"):
            if existing.stat().st_size == size and file_digest(existing) == digest:
                return existing
        target = self.uploads / f"{stem}{suffix}"
        if target.exists():
            target = self.uploads / f"{stem}-{digest[:8]}{suffix}"
        shutil.copyfile(temp, target)
        os.chmod(target, 0o600)
        return target


def listed_file(root: Path, path: str | os.PathLike[str], suffixes: tuple[str, ...]) -> bool:
    """Whether ``path`` (absolute, or relative to the real folder ``root``), once symlinks are followed, is a
    file a listing of ``root`` shows: inside it, under no hidden name, ending in one of ``suffixes``."""
    try:
        real = (root / os.fspath(path)).resolve()
        parts = real.relative_to(root).parts
    except (OSError, RuntimeError, ValueError):  # a NUL, a symlink loop, a path outside root
        return False
    return (bool(parts) and not any(part.startswith(".") for part in parts)
            and real.name.lower().endswith(suffixes) and real.is_file())
