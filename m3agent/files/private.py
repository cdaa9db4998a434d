"""Files that hold people's faces, voices and words are private to their owner: 0600 files, 0700 folders.

Memory DBs and everything beside them (the WAL, the vector index, the memorization log, answers)
are created through these helpers, so the rule is written once. Existing files and folders keep
the permissions their owner gave them.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and its missing parents as 0700 folders (``mkdir(parents=True)`` would give the
    parents the default mode)."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            pass
    return path


def opener(path: str, flags: int) -> int:
    """``open(..., opener=opener)``: a file created by this call is 0600 whatever the umask says."""
    return os.open(path, flags, FILE_MODE)


def open_private(path: str | os.PathLike[str], mode: str = "w", **kwargs):
    """``open()`` that creates the file (and its folders) private; an existing file keeps its mode."""
    private_dir(Path(path).parent)
    return open(path, mode, opener=opener, **kwargs)


def touch_private(path: str | os.PathLike[str]) -> None:
    """Create an empty 0600 file if none is there (SQLite then gives its WAL the same mode)."""
    private_dir(Path(path).parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        pass
