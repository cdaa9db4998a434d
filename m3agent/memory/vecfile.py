"""The text vectors of a DB in one file beside it (``memory.db.vec``), memory-mapped on open.

Reading a million vectors out of SQLite rows takes seconds and gigabytes (14 s and 2.9 GB at 1M lines);
mapping this file takes milliseconds, and only the pages a search touches become resident. Like the ``.ivf``
index it is a cache: written whole (to a temporary file, then renamed, so a reader never sees half of one)
by a process that may write the DB, and used only while it matches the DB: the same identity (DB uuid and
index epoch, which forgetting bumps), the same dimension, and exactly as many text lines up to its highest
id as the DB holds. Lines committed after it was written are read from SQLite on open.

Layout: ``MAGIC``, a little-endian u32 header length, a JSON header, padding to :data:`ALIGN`; the per-line
facts (:data:`ROW`) of ``rows`` lines; padding; their float32 vectors in the same order.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import weakref
from collections.abc import Iterable

import numpy as np

from m3agent.files.private import touch_private

log = logging.getLogger(__name__)

MAGIC = b"M3VEC001"
_WILLNEED = getattr(os, "POSIX_FADV_WILLNEED", None)  # where the platform has posix_fadvise
ALIGN = 4096
ROW = np.dtype([("id", "<i8"), ("video", "<i8"), ("clip", "<i4"), ("kind", "<i4"), ("valid_from", "<i4")])


def _aligned(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


def write(path: str, identity: str, dim: int, parts: Iterable[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Write ``parts`` (``(rows of ROW, their vectors)`` each) as the file at ``path``; False where it
    cannot be written (a read-only folder, a full disk): it is a cache, so nothing is lost."""
    parts = list(parts)
    n = sum(len(rows) for rows, _ in parts)
    max_id = max((int(rows["id"].max()) for rows, _ in parts if len(rows)), default=-1)
    header = json.dumps({"identity": identity, "dim": dim, "rows": n, "max_id": max_id}).encode()
    rows_at = _aligned(len(MAGIC) + 4 + len(header))
    vectors_at = _aligned(rows_at + n * ROW.itemsize)
    tmp = path + ".tmp"
    try:
        touch_private(tmp)
        with open(tmp, "wb") as fh:
            fh.write(MAGIC + struct.pack("<I", len(header)) + header)
            fh.seek(rows_at)
            for rows, _ in parts:
                fh.write(np.ascontiguousarray(rows, ROW).tobytes())
            fh.seek(vectors_at)
            for _, vectors in parts:
                fh.write(np.ascontiguousarray(vectors, np.float32).tobytes())
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not write the vector file %s: %s", path, exc)
        with contextlib.suppress(OSError):
            os.remove(tmp)
        return False
    return True


def header(path: str) -> dict | None:
    """The file's header (``identity``, ``dim``, ``rows``, ``max_id``), or None when there is no readable one."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(MAGIC) + 4)
            if not head.startswith(MAGIC) or len(head) < len(MAGIC) + 4:
                return None
            (size,) = struct.unpack_from("<I", head, len(MAGIC))
            return json.loads(fh.read(size))
    except (OSError, ValueError):
        return None


def read(path: str, identity: str, dim: int) -> tuple[np.ndarray, np.ndarray, RowReader | None] | None:
    """``(rows, vectors, reader)`` mapped from the file (``reader`` reads scattered rows of the same file), or
    None when there is none or it is not for this DB state (the caller still checks the line count against the
    DB: :func:`matches`)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(MAGIC) + 4)
            if not head.startswith(MAGIC) or len(head) < len(MAGIC) + 4:
                raise ValueError("not an m3agent vector file")
            (size,) = struct.unpack_from("<I", head, len(MAGIC))
            header = json.loads(fh.read(size))
            n = int(header["rows"])
            if header.get("identity") != identity or int(header.get("dim", -1)) != dim:
                log.info("vector file %s belongs to another DB state; it will be rewritten", path)
                return None
            rows_at = _aligned(len(MAGIC) + 4 + size)
            vectors_at = _aligned(rows_at + n * ROW.itemsize)
            if os.fstat(fh.fileno()).st_size != vectors_at + n * dim * 4:
                raise ValueError("truncated")
            if n == 0:
                return np.zeros(0, ROW), np.zeros((0, dim), np.float32), None
            fh.seek(rows_at)
            rows = np.fromfile(fh, ROW, count=n)
            vectors = np.memmap(fh, np.float32, mode="r", offset=vectors_at, shape=(n, dim))
            return rows, vectors, RowReader(os.dup(fh.fileno()), vectors_at, dim)
    except (OSError, ValueError, KeyError) as exc:  # a damaged cache is rewritten, never trusted
        log.warning("ignoring unreadable vector file %s: %s", path, exc)
        return None


class RowReader:
    """Scattered rows of the vectors, read with ``pread`` instead of through the mapping: a fault on a mapping
    may map a whole large folio of the page cache, so 768 scattered 1.5-kB rows took ~340 MB into the process's
    resident set on this project's machines; read, they take nothing. It reads the file the mapping maps (its
    own descriptor, opened with it), even after a writer replaced the path."""

    def __init__(self, fd: int, offset: int, dim: int):
        self.offset, self.dim = offset, dim
        self._fd = fd
        weakref.finalize(self, os.close, fd)

    def rows(self, rows: np.ndarray) -> np.ndarray:
        size, fd = 4 * self.dim, self._fd
        at = [self.offset + row * size for row in np.asarray(rows, np.int64).tolist()]
        if len(at) > 1 and _WILLNEED is not None:
            # rows the page cache lost are read from disk all at once, not one after another: 32 cold rows took
            # 12.9 ms read in turn and 0.07 ms announced first; announcing cached rows costs ~0.5 us each
            for start in at:
                os.posix_fadvise(fd, start, size, _WILLNEED)
        data = b"".join([os.pread(fd, size, start) for start in at])
        if len(data) != size * len(rows):
            raise OSError("the vector file ends before a row its header promises")
        return np.frombuffer(data, np.float32).reshape(len(rows), self.dim).copy()


def remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
