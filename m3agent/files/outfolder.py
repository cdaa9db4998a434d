"""Whose folder an ``--out`` is: a command writes its results only into a folder that is new, empty, or marked
as a run of its own, and replaces each file there at once.

A run folder is claimed before any model loads: created private (or found empty) and given a marker,
``.m3agent-run.json``, naming the command and what the run belongs to (the fingerprint of its inputs, the
settings its results depend on). A later run of the same command for the same inputs and settings resumes
there; any other folder is refused untouched, in one line naming the folder and what differs. A folder that
holds anything without our marker is refused even where we would write none of its names: a wrong ``--out``
(``~``, the repository, a colleague's results) is the usual mistake, and a marked folder's files are ours to
replace. Files are written beside their target and moved over it (:func:`os.replace`), so a crash leaves the
old file or the new one, never half of one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from m3agent.errors import M3AgentError
from m3agent.files.private import private_dir, touch_private

MARKER = ".m3agent-run.json"

#: settings that say how fast or where a model runs, not what it answers: a resumed run may change them
OPERATIONAL = frozenset({"batch_size", "retries", "timeout", "concurrency", "threads", "api_key_env", "device",
                         "tensor_parallel", "gpu_memory", "single_thread_texts"})


class OutFolderError(M3AgentError, ValueError):
    """An ``--out`` that is not ours to write (someone's files, another run's folder) or that cannot be written."""


def claim(out: str | os.PathLike[str], command: str, belongs: dict | None = None, *,
          older: Callable[[Path], bool] | None = None) -> Path:
    """Make ``out`` the run folder of ``m3agent COMMAND`` for ``belongs``, or refuse it untouched.

    ``belongs``: what the run's results depend on, flat (name -> JSON value), compared with the marker's so a
    re-run reuses results only for the same; None for a command that rewrites the whole folder each run.
    ``older``: whether a folder without a marker is one this command wrote before folders were marked (it raises
    a project error for a file of ours that is not ours); such a folder is marked and resumed.
    """
    out = Path(out)
    try:
        if out.is_dir():
            marker = _marker(out)
            if marker is None:
                _unmarked(out, command, older)
            else:
                _same_run(out, marker, command, belongs)
        elif out.exists() or out.is_symlink():
            raise OutFolderError(f"--out {out} is a file, not a folder: choose another --out")
        else:
            private_dir(out)
        write_text(out / MARKER, json.dumps({"command": command, "belongs": belongs}, indent=1, ensure_ascii=False))
    except OSError as exc:
        raise OutFolderError(f"cannot write into --out {out}: {exc.strerror or exc}") from exc
    return out


def _marker(out: Path) -> dict | None:
    try:
        marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return marker if isinstance(marker, dict) and isinstance(marker.get("command"), str) else None


def _unmarked(out: Path, command: str, older: Callable[[Path], bool] | None) -> None:
    names = sorted(os.listdir(out))
    if not names or (older is not None and older(out)):
        return
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    raise OutFolderError(f"--out {out} holds files of no m3agent {command} run ({shown}); they are left untouched: "
                         "choose another --out (a new or empty folder)")


def _same_run(out: Path, marker: dict, command: str, belongs: dict | None) -> None:
    if marker["command"] != command:
        raise OutFolderError(f"--out {out} holds a run of m3agent {marker['command']}, not of m3agent {command}; "
                             "it is left untouched: choose another --out")
    before, now = marker.get("belongs") or {}, belongs or {}
    differ = sorted(key for key in before.keys() | now.keys() if key not in before or key not in now
                    or before[key] != now[key])
    if differ:
        shown = ", ".join(differ[:4]) + (f" and {len(differ) - 4} more" if len(differ) > 4 else "")
        raise OutFolderError(f"--out {out} holds a run of m3agent {command} made with other {shown}; its results "
                             "are not reused for other inputs: choose another --out")


def settings(section, prefix: str, skip: frozenset[str] = OPERATIONAL) -> dict:
    """A config section (a dataclass) as dotted names -> values, without ``skip``: what results depend on."""
    flat: dict = {}
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if f.name in skip:
            continue
        if dataclasses.is_dataclass(value):
            flat.update(settings(value, f"{prefix}.{f.name}", skip))
        else:
            flat[f"{prefix}.{f.name}"] = list(value) if isinstance(value, tuple) else value
    return flat


def fingerprint(value) -> str:
    """What a run was made from, by content: SHA-256 of ``value`` as canonical JSON (dataclasses as dicts)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=_plain)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _plain(value):
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else str(value)


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A private file beside ``path`` (same suffix) to write; when the block ends it is synced and replaces
    ``path`` at once. A block that fails leaves ``path`` as it was."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    touch_private(tmp)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` by ``text`` (UTF-8, a final newline) at once."""
    with replacing(path) as tmp:
        tmp.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


@contextmanager
def staged(out: str | os.PathLike[str]) -> Iterator[Path]:
    """A private folder inside ``out`` for a writer that writes several files by name; when the block ends, each
    file replaces its namesake in ``out`` at once."""
    out = Path(out)
    stage = out / ".staging"
    shutil.rmtree(stage, ignore_errors=True)  # what a crash left
    private_dir(stage)
    try:
        yield stage
        for path in sorted(stage.iterdir()):
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(path, out / path.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
