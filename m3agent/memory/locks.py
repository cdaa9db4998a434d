"""One writing process per memory DB, enforced with an advisory lock file beside it (``DB.lock``).

SQLite alone lets two writers interleave their clips and only notices at commit, after a clip's
models have run. The lock is taken when a DB is opened for writing and fails at once, naming the
process that holds it. Within one process the lock is shared (threads are serialised by the store).
The file holds only the holder's pid: nothing about the memory's content, so ``forget`` need not
scrub it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import threading
import time
from pathlib import Path

from m3agent.files.private import opener
from m3agent.memory.errors import MemoryStoreError

_held: dict[str, list] = {}  # real lock path -> [fd, users]
_guard = threading.Lock()


class WriterBusyError(MemoryStoreError):
    """Another process is writing the DB (memorizing, importing or forgetting)."""


def lock_path(db: str | os.PathLike[str]) -> Path:
    return Path(f"{db}.lock")


def _describe(pid: int) -> str:
    """``pid 4242: m3agent memorize ep.mp4 ...`` from /proc where the system has one."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return f"pid {pid}"
    if len(argv) > 1 and os.path.basename(argv[0]).startswith("python"):
        argv = argv[1:]
    if argv and argv[0] == "-m":
        argv = argv[1:]
    command = " ".join(" ".join([os.path.basename(argv[0]), *argv[1:]]).split()) if argv else "?"
    return f"pid {pid}: {command[:120]}"


def _holder(fd: int) -> str:
    try:
        record = json.loads(os.pread(fd, 4096, 0) or b"{}")
        since = time.strftime("%H:%M:%S", time.localtime(float(record["since"])))
        return f"{_describe(int(record['pid']))}, since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def acquire(db: str | os.PathLike[str]) -> str:
    """Take the writer lock of ``db`` (shared within this process); returns the key to :func:`release`."""
    path = lock_path(db)
    key = os.path.realpath(path)
    with _guard:
        if key in _held:
            _held[key][1] += 1
            return key
        fd = opener(str(path), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _holder(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise WriterBusyError(f"{db} is being written by another process ({holder}); one writer at a "
                                      "time: wait for it to finish, or stop it") from exc
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "since": time.time()}).encode(), 0)
        _held[key] = [fd, 1]
        return key


def release(key: str) -> None:
    with _guard:
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _held[key]
        fd = entry[0]
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        os.close(fd)  # closing the descriptor releases the lock
