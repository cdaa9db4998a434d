"""A file's content digest, read in blocks so a large file never sits in memory whole."""

from __future__ import annotations

import hashlib
import os


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of the file's bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
