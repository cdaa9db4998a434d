"""Append-only JSON-lines results, one record per id, that a re-run reads back to go on where it stopped.

``m3agent qa`` and ``m3agent bench`` write each result the moment it exists (flushed and synced), so a kill
loses nothing finished. Reading back keeps the last line of each id (a later line is a retry or a fuller
version of an earlier one), drops a half-written last line, and rewrites the file compacted when anything was
dropped. A file with a line the writer does not write is refused untouched: a results file is only ever
one this writer made, never the questions file or someone's notes passed by mistake.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from m3agent.errors import M3AgentError
from m3agent.files.private import open_private


class ResultsFileError(M3AgentError, ValueError):
    """A results file that cannot be read back or written, or one this writer did not make."""


class ResultsFile:
    """``keys``: what every line of ours carries, ``id`` first. ``writer`` names the command in messages."""

    def __init__(self, path: str | os.PathLike[str], keys: Iterable[str], writer: str,
                 error: type[ResultsFileError] = ResultsFileError):
        self.path, self.keys, self.writer, self.error = Path(path), frozenset(keys) | {"id"}, writer, error

    def load(self, keep: Callable[[dict], bool] | None = None) -> dict[str, dict]:
        """The last record of each id (those ``keep`` accepts), the file compacted to exactly these."""
        if not self.path.exists():
            return {}
        try:
            text = self.path.read_bytes().decode("utf-8")
        except OSError as exc:
            raise self.error(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise self.error(f"{self.path} is not a results file of {self.writer} (not UTF-8 text); "
                             "choose another --out") from exc
        lines = text.split("\n")  # the last one is "" after a complete line, else what a crash cut short
        records: dict[str, dict] = {}
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            record = self._record(line)
            if record is None:
                if number == len(lines) and line.startswith('{"id": '):
                    continue  # the torn last line of an interrupted write
                raise self.error(f"{self.path}:{number} is not a line {self.writer} writes; it only adds "
                                 "results to a file of its own: choose another --out")
            records.pop(str(record["id"]), None)  # a later line of an id replaces it, and its place
            records[str(record["id"])] = record
        kept = {key: record for key, record in records.items() if keep is None or keep(record)}
        if len(kept) != len(lines) - 1 or lines[-1]:  # a dropped, repeated, blank or torn line
            self.rewrite(kept.values())
        return kept

    def _record(self, line: str) -> dict | None:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            return None
        return record if isinstance(record, dict) and self.keys <= record.keys() else None

    def rewrite(self, records: Iterable[dict]) -> None:
        """Replace the file at once by ``records`` (through a symlink, the file it points at)."""
        target = self.path.resolve()
        tmp = target.with_name(target.name + ".tmp")
        try:
            with open_private(tmp, "w", encoding="utf-8") as fh:
                fh.writelines(_line(record) for record in records)
            os.replace(tmp, target)
        except OSError as exc:
            raise self.error(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def appender(self) -> Appender:
        try:
            return Appender(open_private(self.path, "a", encoding="utf-8"), self)  # results quote what people said
        except OSError as exc:
            raise self.error(f"cannot write {self.path}: {exc.strerror or exc}") from exc


class Appender:
    """Adds records for good: each is on disk (flushed and synced) before :meth:`write` returns."""

    def __init__(self, fh: IO[str], owner: ResultsFile):
        self.fh, self.owner = fh, owner

    def write(self, record: dict) -> None:
        if next(iter(record), None) != "id":  # ``id`` first: how a torn line of ours is told from a foreign one
            record = {"id": record["id"], **record}
        try:
            self.fh.write(_line(record))
            self.fh.flush()
            os.fsync(self.fh.fileno())
        except OSError as exc:
            raise self.owner.error(f"cannot write {self.owner.path}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> Appender:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"
