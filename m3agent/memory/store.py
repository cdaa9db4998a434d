"""SQLite persistence of the memory graph: one file, WAL, a schema version, one transaction per clip.

The store knows tables and rows, nothing about search. Vectors are float32 blobs; text vectors sit
in their own table so that node scans never read them and pages pack tightly.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import re
import sqlite3
import threading
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np

from m3agent.files.private import private_dir, touch_private
from m3agent.memory import locks
from m3agent.memory.errors import (
    CorruptDatabaseError,
    DatabaseBusyError,
    DatabaseNotFoundError,
    DiskFullError,
    ForeignDatabaseError,
    MemoryStoreError,
    ReadOnlyDatabaseError,
    SchemaVersionError,
)
from m3agent.memory.model import (
    DECLARATIVE_KINDS,
    TEXT_KINDS,
    Clip,
    NodeKind,
    TextNode,
    Video,
    VoiceSegment,
    sql_kinds,
)

log = logging.getLogger(__name__)

APP_ID = "m3agent"
SCHEMA_VERSION = 2  # 2: text records and the lexical (FTS5) index of lines
SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000  # how long a write waits for another connection's lock
PAGE_SIZE = 8192  # five 384-d float32 vectors per page: ~1.6 KiB per vector on disk

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE videos (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, path TEXT, duration REAL,
  clip_seconds REAL NOT NULL DEFAULT 30, meta TEXT);
CREATE TABLE clips (
  video_id INTEGER NOT NULL, clip INTEGER NOT NULL, start REAL NOT NULL, "end" REAL NOT NULL,
  PRIMARY KEY (video_id, clip)) WITHOUT ROWID;
CREATE TABLE nodes (
  id INTEGER PRIMARY KEY, video_id INTEGER NOT NULL, kind INTEGER NOT NULL, clip INTEGER,
  text TEXT, weight REAL NOT NULL DEFAULT 1, valid_from INTEGER, invalidated_by INTEGER,
  invalidated_at INTEGER, meta TEXT);
CREATE INDEX nodes_by_video ON nodes (video_id, clip);
CREATE TABLE edges (
  text_id INTEGER NOT NULL, entity_id INTEGER NOT NULL, weight REAL NOT NULL,
  PRIMARY KEY (text_id, entity_id)) WITHOUT ROWID;
CREATE INDEX edges_by_entity ON edges (entity_id);
CREATE TABLE vectors (node_id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
CREATE TABLE entity_embeddings (
  node_id INTEGER NOT NULL, slot INTEGER NOT NULL, clip INTEGER, quality REAL, vec BLOB NOT NULL,
  PRIMARY KEY (node_id, slot)) WITHOUT ROWID;
CREATE TABLE crops (
  node_id INTEGER NOT NULL, slot INTEGER NOT NULL, clip INTEGER, quality REAL, jpeg BLOB NOT NULL,
  PRIMARY KEY (node_id, slot)) WITHOUT ROWID;
CREATE TABLE sightings (
  node_id INTEGER NOT NULL, clip INTEGER NOT NULL, PRIMARY KEY (node_id, clip)) WITHOUT ROWID;
CREATE TABLE voice_segments (
  node_id INTEGER NOT NULL, clip INTEGER NOT NULL, start REAL NOT NULL, "end" REAL NOT NULL,
  text TEXT NOT NULL);
CREATE INDEX voice_segments_by_node ON voice_segments (node_id);
"""

#: schema 2: the record ids of text sources (``remember`` is idempotent on them) and the lexical index
_SCHEMA_2 = """
CREATE TABLE records (
  video_id INTEGER NOT NULL, record TEXT NOT NULL, node_id INTEGER NOT NULL,
  PRIMARY KEY (video_id, record)) WITHOUT ROWID;
CREATE INDEX records_by_node ON records (node_id);
"""
#: what opening and searching a large memory reads without scanning: superseded lines (a partial index, tiny), a
#: video's nodes of one kind (its faces and voices, its equivalence lines: a video's characters, built at the first
#: search that returns one of its clips, read those instead of its every line), and the count of text lines (meta
#: ``text_lines``: ``"count:highest id"``, kept by every insert and delete in their transaction). A DB from before
#: them gets them at its first writable open (one scan each); a read-only open of one scans or counts instead.
_READ_INDEXES = {
    "nodes_superseded": "CREATE INDEX IF NOT EXISTS nodes_superseded ON nodes (invalidated_at)"
                        " WHERE invalidated_at IS NOT NULL",
    "nodes_by_kind": "CREATE INDEX IF NOT EXISTS nodes_by_kind ON nodes (video_id, kind, clip)",
}
TEXT_LINES = "text_lines"
#: meta key: a text source's procedural record ids are kept apart from its episodic ones (a lesson and a record
#: may share an id); a DB from before gets its procedural ids re-keyed at its first writable open
RECORD_KINDS = "record_kinds"
_PROCEDURAL_KEY = "\x1f"  # before a procedural record's id in ``records`` (record ids hold no control character)
#: BM25 over the text of lines, inside the DB file; the rows live in ``nodes`` (external content)
_LEXICAL = ("CREATE VIRTUAL TABLE lines_fts USING fts5(text, content='nodes', content_rowid='id',"
            " tokenize='unicode61 remove_diacritics 2', detail=full)")
_TEXT = sql_kinds(TEXT_KINDS)


def vec_to_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def blob_to_vec(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)


def check_file(path: Path) -> None:
    """Fail clearly, before SQLite does, on a missing, empty or non-SQLite file."""
    if not path.exists():
        raise DatabaseNotFoundError(f"memory DB not found: {path}")
    if path.is_dir():
        raise CorruptDatabaseError(f"{path} is a directory, not a memory DB")
    with open(path, "rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head != SQLITE_MAGIC:
        what = "empty" if not head else "not an SQLite database"
        raise CorruptDatabaseError(f"{path} is {what}; it is not a usable m3agent memory DB")


def store_error(path: Path, exc: BaseException) -> MemoryStoreError:
    """What a failed SQLite or file operation on ``path`` means, in words a user can act on."""
    if isinstance(exc, MemoryStoreError):
        return exc
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    folder = path.parent if str(path.parent) else Path(".")
    if name.startswith("SQLITE_FULL") or "disk is full" in text or getattr(exc, "errno", None) == 28:
        return DiskFullError(f"{path}: disk full ({text}); what was stored before is intact, the clip in flight "
                             "was not written: free space and run the same command again")
    if (name.startswith("SQLITE_READONLY") or "readonly" in text or isinstance(exc, PermissionError)
            or (name.startswith("SQLITE_CANTOPEN") and not os.access(folder, os.W_OK))):
        where = path if os.access(folder, os.W_OK) or not folder.exists() else f"{path} (its folder {folder})"
        return ReadOnlyDatabaseError(f"{where} is read-only: {text}; copy the DB somewhere writable, or use a "
                                     "command that only reads it")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return DatabaseBusyError(f"{path} is locked by another process writing to it: {text}")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text:
        return CorruptDatabaseError(f"{path} is corrupt: {text}")
    if name.startswith("SQLITE_IOERR") or isinstance(exc, OSError):
        return MemoryStoreError(f"{path}: I/O error: {text}")
    return MemoryStoreError(f"{path}: {text}")


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the writer lock of the DB at ``path`` for a block, before the DB is opened: a job that loads
    models first then fails at once, not after the loading (see :mod:`m3agent.memory.locks`)."""
    path = Path(path)
    try:
        private_dir(path.parent)
        key = locks.acquire(path)
    except OSError as exc:
        raise store_error(path, exc) from exc
    try:
        yield
    finally:
        locks.release(key)


def _speaks_for_its_file(cls):
    """Every public method of the store reports SQLite and OS errors as :func:`store_error` does."""

    def wrap(method):
        if inspect.isgeneratorfunction(method):
            @functools.wraps(method)
            def rows(self, *args, **kwargs):
                try:
                    yield from method(self, *args, **kwargs)
                except (sqlite3.Error, OSError) as exc:
                    raise store_error(self.path, exc) from exc
            return rows

        @functools.wraps(method)
        def call(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except (sqlite3.Error, OSError) as exc:
                raise store_error(self.path, exc) from exc
        return call

    for name, member in list(vars(cls).items()):
        if inspect.isfunction(member) and not name.startswith("_") and name != "transaction":
            setattr(cls, name, wrap(member))
    return cls


@_speaks_for_its_file
class SQLiteStore:
    """Rows of one memory DB. Thread-safe for one writer and many readers (WAL)."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if fresh and (not create or readonly):
            check_file(self.path)  # raises the right error
        if not fresh:
            check_file(self.path)
        self._lock = threading.RLock()
        self._depth = 0
        self._writer_lock: str | None = None
        self._closed = False
        try:
            if readonly:
                self.conn = self._connect_readonly()
            else:
                if fresh:
                    touch_private(self.path)  # SQLite gives the WAL and its index the DB file's mode
                self.conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not fresh:
                self._check_identity()  # before anything is changed: another application's file stays as it is
            if not readonly:
                self._writer_lock = locks.acquire(self.path)
            if fresh:
                self._create_schema()
            elif not readonly:
                self.conn.execute("PRAGMA journal_mode = WAL")
                if int(self.meta().get("schema", "0")) < SCHEMA_VERSION:
                    self._upgrade()
                meta = self.meta()
                if TEXT_LINES not in meta or RECORD_KINDS not in meta or not self._has_read_indexes():
                    self._add_read_aids()
            if not readonly:
                self.conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException as exc:
            self._release_writer_lock()
            if hasattr(self, "conn"):
                self.conn.close()
            if isinstance(exc, sqlite3.Error | OSError):
                raise store_error(self.path, exc) from exc
            raise

    # ------------------------------------------------------------------ lifecycle
    def _connect_readonly(self) -> sqlite3.Connection:
        """A read-only connection. A WAL DB in a folder nobody may write to cannot get its shared-memory
        file; nobody can be writing it either, so it is opened as immutable."""
        uri = f"file:{urllib.parse.quote(str(self.path.resolve()))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            if os.access(self.path.parent if str(self.path.parent) else ".", os.W_OK):
                raise
            conn.close()
        return sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False)

    def _create_schema(self) -> None:
        self.conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        self.conn.execute("PRAGMA journal_mode = WAL")
        with self.transaction():
            for statement in filter(str.strip, (_SCHEMA + _SCHEMA_2).split(";")):
                self.conn.execute(statement)
            self._create_lexical()
            self._create_read_indexes(self.conn)
            self.conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("app", APP_ID), ("schema", str(SCHEMA_VERSION)), ("uuid", uuid.uuid4().hex), (TEXT_LINES, "0:-1"),
                 (RECORD_KINDS, "1")],
            )

    def _has_read_indexes(self) -> bool:
        q = f"SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ({','.join('?' * len(_READ_INDEXES))})"
        return int(self.conn.execute(q, tuple(_READ_INDEXES)).fetchone()[0]) == len(_READ_INDEXES)

    @staticmethod
    def _create_read_indexes(conn: sqlite3.Connection) -> None:
        for statement in _READ_INDEXES.values():
            conn.execute(statement)

    def _add_read_aids(self) -> None:
        """Give a DB written before them the read indexes, the line counter (one scan each, once) and its
        procedural record ids keyed apart."""
        with self.transaction() as c:
            self._create_read_indexes(c)
            if c.execute("SELECT 1 FROM meta WHERE key = ?", (TEXT_LINES,)).fetchone() is None:
                self._set_text_lines(self.text_vector_count(), self._top_text_line())
            if c.execute("SELECT 1 FROM meta WHERE key = ?", (RECORD_KINDS,)).fetchone() is None:
                if self.has_records:
                    c.execute("UPDATE records SET record = ? || record WHERE substr(record, 1, 1) != ? AND node_id IN"
                              " (SELECT id FROM nodes WHERE kind = ?)",
                              (_PROCEDURAL_KEY, _PROCEDURAL_KEY, int(NodeKind.PROCEDURAL)))
                c.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (RECORD_KINDS,))

    def _create_lexical(self) -> None:
        """The FTS5 table, where this SQLite has FTS5 (without it, search is dense only)."""
        try:
            self.conn.execute(_LEXICAL)
        except sqlite3.OperationalError as exc:
            if "fts5" not in str(exc):
                raise
            log.warning("%s: this SQLite has no FTS5; memory search will use vectors only", self.path)

    def _upgrade(self) -> None:
        """Bring a schema-1 DB to schema 2 in one transaction: records table, lexical index of its lines."""
        with self.transaction() as c:
            if int(dict(c.execute("SELECT key, value FROM meta")).get("schema", "0")) >= SCHEMA_VERSION:
                return  # another process upgraded it meanwhile
            for statement in filter(str.strip, _SCHEMA_2.split(";")):
                c.execute(statement)
            self._create_lexical()
            if self.has_lexical:
                c.execute("INSERT INTO lines_fts (lines_fts) VALUES ('rebuild')")
            c.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))
        self.__dict__.pop("has_lexical", None)

    @functools.cached_property
    def has_lexical(self) -> bool:
        """Whether the lexical index exists (a schema-1 DB opened read-only, or an SQLite without FTS5, has none)."""
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'lines_fts'").fetchone()
        return row is not None

    @functools.cached_property
    def has_records(self) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'records'").fetchone() is not None

    def _check_identity(self) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            raise ForeignDatabaseError(f"{self.path} is an SQLite file but not an m3agent memory DB")
        meta = dict(self.conn.execute("SELECT key, value FROM meta"))
        if meta.get("app") != APP_ID:
            raise ForeignDatabaseError(f"{self.path} is an SQLite file but not an m3agent memory DB")
        version = int(meta.get("schema", "0"))
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path} has schema {version}; this m3agent reads up to {SCHEMA_VERSION}: upgrade m3agent"
            )
        if version < 1:
            raise SchemaVersionError(f"{self.path} has an unknown schema version {version!r}")

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            self.conn.close()
            self._closed = True
            self._release_writer_lock()

    def _release_writer_lock(self) -> None:
        if getattr(self, "_writer_lock", None):
            locks.release(self._writer_lock)
            self._writer_lock = None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; nested uses join the outer one; errors roll back."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc
            self._depth = 1
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error | OSError):
                    raise store_error(self.path, exc) from exc
                raise
            finally:
                self._depth = 0

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads in one read transaction: they all see the same commits (inside a transaction, it is that one)."""
        with self._lock:
            if self._depth or self.conn.in_transaction:
                yield
                return
            try:
                self.conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc
            try:
                yield
            except BaseException:
                with suppress(sqlite3.Error):  # the reads' own error (a corrupt page) is the one to report
                    self.conn.execute("ROLLBACK")
                raise
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc

    def integrity_check(self) -> list[str]:
        rows = [r[0] for r in self.conn.execute("PRAGMA integrity_check")]
        return [] if rows == ["ok"] else rows

    def vector_problems(self) -> list[str]:
        """Vectors that cannot be searched: a size other than the DB's dimension, NaN or infinity.
        SQLite's integrity check cannot see these (a blob is a blob)."""
        problems: list[str] = []
        dim = int(self.meta().get("dim", 0))
        bad_size, bad_value = [], []
        for node_id, blob in self.conn.execute("SELECT node_id, vec FROM vectors"):
            if dim and len(blob) != dim * 4 or len(blob) % 4:
                bad_size.append(int(node_id))
            elif not np.isfinite(blob_to_vec(blob)).all():
                bad_value.append(int(node_id))
        if bad_size:
            problems.append(f"{len(bad_size)} text vectors are not {dim}-d (nodes {bad_size[:10]})")
        if bad_value:
            problems.append(f"{len(bad_value)} text vectors hold NaN or infinity (nodes {bad_value[:10]})")
        q = "SELECT n.kind, e.node_id, e.vec FROM entity_embeddings e JOIN nodes n ON n.id = e.node_id"
        sizes: dict[int, dict[int, list[int]]] = {}
        for kind, node_id, blob in self.conn.execute(q):
            sizes.setdefault(int(kind), {}).setdefault(len(blob), []).append(int(node_id))
            if len(blob) % 4 or not np.isfinite(blob_to_vec(blob[: len(blob) // 4 * 4])).all():
                problems.append(f"{NodeKind(kind).label} node {node_id} has a broken embedding")
        for kind, by_size in sizes.items():
            if len(by_size) > 1:
                usual = max(by_size, key=lambda size: len(by_size[size]))
                odd = sorted({n for size, nodes in by_size.items() if size != usual for n in nodes})
                problems.append(f"{NodeKind(kind).label} embeddings of {len(odd)} nodes differ in size from the "
                                f"rest ({usual // 4}-d): nodes {odd[:10]}")
        return problems

    def checkpoint(self, timeout: float = 10.0) -> bool:
        """Copy the WAL into the main file and empty it, waiting up to ``timeout`` s for readers. False
        while another connection still reads an older snapshot (its pages must stay in the WAL)."""
        with self._lock:
            self.conn.execute(f"PRAGMA busy_timeout = {max(0, int(timeout * 1000))}")
            try:
                busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        wal = Path(f"{self.path}-wal")
        return busy == 0 and (not wal.exists() or wal.stat().st_size == 0)

    def vacuum(self) -> None:
        """Rewrite the file compactly so that nothing deleted survives in its free pages."""
        with self._lock:
            self.conn.execute("VACUUM")

    # ------------------------------------------------------------------ meta
    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta"))

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def identity(self) -> str:
        """This DB and the state of its ids: a cache (the ``.ivf`` index) built for another is never used."""
        meta = self.meta()
        return f"{meta.get('uuid')}:{meta.get('index_epoch', '0')}"

    def data_version(self) -> tuple[int, str]:
        """Changes whenever another connection commits (``PRAGMA data_version``) or forgets (index epoch)."""
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        return int(version), self.meta().get("index_epoch", "0")

    def bump_index_epoch(self) -> None:
        """Mark that node ids were removed: readers drop their caches instead of extending them."""
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES ('index_epoch', '1') ON CONFLICT (key)"
            " DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    # ------------------------------------------------------------------ videos and clips
    def upsert_video(
        self, name: str, path: str | None, duration: float | None, clip_seconds: float, meta: dict | None = None
    ) -> int:
        with self.transaction() as c:
            row = c.execute("SELECT id FROM videos WHERE name = ?", (name,)).fetchone()
            if row:
                c.execute(  # a video with clips keeps the clip length they were cut with
                    "UPDATE videos SET path = COALESCE(?, path), duration = COALESCE(?, duration),"
                    " clip_seconds = CASE WHEN EXISTS (SELECT 1 FROM clips WHERE video_id = videos.id)"
                    " THEN clip_seconds ELSE ? END WHERE id = ?",
                    (path, duration, clip_seconds, row[0]),
                )
                return int(row[0])
            cur = c.execute(
                "INSERT INTO videos (name, path, duration, clip_seconds, meta) VALUES (?, ?, ?, ?, ?)",
                (name, path, duration, clip_seconds, json.dumps(meta) if meta else None),
            )
            return int(cur.lastrowid)

    def video_meta(self, video_id: int) -> dict[str, Any]:
        row = self.conn.execute("SELECT meta FROM videos WHERE id = ?", (video_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else {}

    def update_video_meta(self, video_id: int, **values: Any) -> None:
        with self.transaction() as c:
            meta = {**self.video_meta(video_id), **values}
            c.execute("UPDATE videos SET meta = ? WHERE id = ?", (json.dumps(meta), video_id))

    def videos(self) -> list[Video]:
        """Every video, by id; kept until this connection or another one writes (every search asks)."""
        key = (self.conn.total_changes, self.conn.execute("PRAGMA data_version").fetchone()[0])
        cached = self.__dict__.get("_videos_cache")
        if cached is None or cached[0] != key:
            cached = self._videos_cache = (key, [
                Video(int(r[0]), r[1], r[2], r[3], float(r[4]))
                for r in self.conn.execute("SELECT id, name, path, duration, clip_seconds FROM videos ORDER BY id")
            ])
        return list(cached[1])

    def clips(self, video_id: int) -> list[Clip]:
        return [
            Clip(video_id, int(r[0]), float(r[1]), float(r[2]))
            for r in self.conn.execute(
                'SELECT clip, start, "end" FROM clips WHERE video_id = ? ORDER BY clip', (video_id,)
            )
        ]

    def clip_spans(self, video_id: int, clip_ids: Iterable[int]) -> dict[int, tuple[float, float]]:
        ids = sorted(set(clip_ids))
        out: dict[int, tuple[float, float]] = {}
        for chunk in _chunks(ids):
            q = f'SELECT clip, start, "end" FROM clips WHERE video_id = ? AND clip IN ({",".join("?" * len(chunk))})'
            out.update({int(r[0]): (float(r[1]), float(r[2])) for r in self.conn.execute(q, (video_id, *chunk))})
        return out

    def resolve_video(self, video: int | str | None) -> Video:
        """A video by name or id; with None, the only video in the DB."""
        videos = self.videos()
        if video is None:
            if len(videos) == 1:
                return videos[0]
            if not videos:
                raise MemoryStoreError(f"{self.path} holds no video yet")
            names = ", ".join(v.name for v in videos)
            raise MemoryStoreError(f"{self.path} holds {len(videos)} videos or text sources ({names}): "
                                   "name one with --video NAME")
        for v in videos:
            if v.name == str(video) or str(v.id) == str(video):
                return v
        raise MemoryStoreError(f"no video {video!r} in {self.path}")

    def has_clip(self, video_id: int, clip: int) -> bool:
        q = "SELECT 1 FROM clips WHERE video_id = ? AND clip = ?"
        return self.conn.execute(q, (video_id, clip)).fetchone() is not None

    def insert_clip(self, video_id: int, clip: int, start: float, end: float) -> None:
        self.conn.execute(
            'INSERT OR REPLACE INTO clips (video_id, clip, start, "end") VALUES (?, ?, ?, ?)',
            (video_id, clip, start, end),
        )

    # ------------------------------------------------------------------ nodes
    def next_node_id(self) -> int:
        row = self.conn.execute("SELECT COALESCE(MAX(id), -1) + 1 FROM nodes").fetchone()
        return int(row[0])

    def node_video(self, node_id: int) -> int | None:
        """The video of a node, or of an entity folded into another (its tags still resolve)."""
        row = self.conn.execute("SELECT video_id FROM nodes WHERE id = ?", (int(node_id),)).fetchone()
        if row is None and self._has_merges():
            row = self.conn.execute("SELECT video_id FROM merged_entities WHERE node_id = ?", (int(node_id),)).fetchone()
        return None if row is None else int(row[0])

    def _has_merges(self) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'merged_entities'").fetchone() is not None

    def node_kinds(self, node_ids: Iterable[int]) -> dict[int, NodeKind]:
        out: dict[int, NodeKind] = {}
        for chunk in _chunks(sorted(set(node_ids))):
            q = f"SELECT id, kind FROM nodes WHERE id IN ({','.join('?' * len(chunk))})"
            out.update({int(r[0]): NodeKind(r[1]) for r in self.conn.execute(q, chunk)})
        return out

    def entity_rows(self, video_id: int | None = None) -> list[tuple[int, int, NodeKind, float]]:
        """``(id, video_id, kind, weight)`` of face and voice nodes."""
        q = "SELECT id, video_id, kind, weight FROM nodes WHERE kind IN (0, 1)"
        args: tuple = ()
        if video_id is not None:
            q += " AND video_id = ?"
            args = (video_id,)
        return [(int(r[0]), int(r[1]), NodeKind(r[2]), float(r[3])) for r in self.conn.execute(q + " ORDER BY id", args)]

    def entity_first_clips(self, video_id: int) -> list[tuple[int, NodeKind, int]]:
        """``(id, kind, clip first seen)`` of a video's face and voice nodes, in one query."""
        q = "SELECT id, kind, COALESCE(clip, -1) FROM nodes WHERE kind IN (0, 1) AND video_id = ? ORDER BY id"
        return [(int(i), NodeKind(k), int(c)) for i, k, c in self.conn.execute(q, (video_id,))]

    def text_nodes(
        self,
        video_id: int | None = None,
        clips: Sequence[int] | None = None,
        ids: Sequence[int] | None = None,
        kind: NodeKind | None = None,
        kinds: Sequence[NodeKind] = DECLARATIVE_KINDS,
        containing: str | None = None,
    ) -> list[TextNode]:
        """Text nodes with their entity ids, in id order, filtered as asked (declarative lines unless
        ``kind`` or ``kinds`` says otherwise; with ``containing``, only lines holding that word in any
        ASCII case: a cheap pre-filter for callers that then match a pattern)."""
        where, args = [f"n.kind IN {sql_kinds([kind] if kind is not None else kinds)}"], []
        if containing is not None:
            where.append("n.text LIKE ? ESCAPE '\\'")
            args.append("%" + re.sub(r"([%_\\])", r"\\\1", containing) + "%")
        if video_id is not None:
            where.append("n.video_id = ?")
            args.append(video_id)
        if clips is not None:
            where.append(f"n.clip IN ({','.join('?' * len(clips))})")
            args.extend(clips)
        results: list[TextNode] = []
        id_chunks: list[Sequence[int] | None] = list(_chunks(sorted(set(ids)))) if ids is not None else [None]
        for chunk in id_chunks:
            clause = list(where)
            chunk_args = list(args)
            if chunk is not None:
                clause.append(f"n.id IN ({','.join('?' * len(chunk))})")
                chunk_args.extend(chunk)
            q = (
                "SELECT n.id, n.video_id, n.kind, n.clip, n.text, n.weight, n.valid_from, n.invalidated_by, n.invalidated_at,"
                " (SELECT group_concat(e.entity_id) FROM edges e WHERE e.text_id = n.id)"
                f" FROM nodes n WHERE {' AND '.join(clause)} ORDER BY n.id"
            )
            for r in self.conn.execute(q, chunk_args):
                ents = [int(x) for x in r[9].split(",")] if r[9] else []
                results.append(
                    TextNode(int(r[0]), int(r[1]), NodeKind(r[2]), int(r[3]), r[4], float(r[5]),
                             r[6], r[7], sorted(ents), r[8])
                )
        results.sort(key=lambda n: n.id)
        return results

    def clip_lines(self, video_id: int, clip: int, kinds: Sequence[NodeKind] = DECLARATIVE_KINDS,
                   ) -> list[tuple[str, int, int | None, int | None]]:
        """``(text, clip, valid_from, invalidated_at)`` of one clip's lines of these kinds, in id order: what a
        search shows of a clip (one indexed lookup, no entity links)."""
        q = ("SELECT text, clip, valid_from, invalidated_at FROM nodes"
             f" WHERE video_id = ? AND clip = ? AND kind IN {sql_kinds(kinds)} ORDER BY id")
        return self.conn.execute(q, (int(video_id), int(clip))).fetchall()

    def text_vector_rows(self, video_id: int | None = None, after_id: int = -1,
                         ) -> Iterator[tuple[int, int, int, int, int, int | None, bytes]]:
        """``(id, video_id, kind, clip, valid_from, invalidating clip, vector blob)`` of the text nodes
        (of one video, and with ids above ``after_id``), in id order."""
        q = (
            "SELECT n.id, n.video_id, n.kind, n.clip, COALESCE(n.valid_from, n.clip),"
            " n.invalidated_at, v.vec"
            f" FROM nodes n JOIN vectors v ON v.node_id = n.id WHERE n.kind IN {_TEXT} AND n.id > ?"
        )
        args: tuple = (after_id,)
        if video_id is not None:
            q += " AND n.video_id = ?"
            args = (after_id, video_id)
        yield from self.conn.execute(q + " ORDER BY n.id", args)

    def text_vector_count(self, up_to_id: int | None = None) -> int:
        """How many text nodes with a vector have ids up to ``up_to_id`` (all with None): a full scan."""
        q = f"SELECT count(*) FROM nodes n JOIN vectors v ON v.node_id = n.id WHERE n.kind IN {_TEXT} AND n.id <= ?"
        return int(self.conn.execute(q, ((1 << 63) - 1 if up_to_id is None else up_to_id,)).fetchone()[0])

    def text_line_total(self) -> int:
        """How many text nodes with a vector the DB holds (does a cached copy hold them all?): the counter in
        meta, checked against the highest id, so that a writer that did not keep it (an older m3agent) is
        noticed, else a count (:func:`text_vector_count`)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (TEXT_LINES,)).fetchone()
        if row is not None:
            count, top = (int(x) for x in row[0].split(":"))
            if top == self._top_text_line():
                return count
        return self.text_vector_count()

    def _top_text_line(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(node_id), -1) FROM vectors").fetchone()[0])

    def _count_text_lines(self, delta: int) -> None:
        """Keep the line counter (in the caller's transaction) after ``delta`` lines were added or removed."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (TEXT_LINES,)).fetchone()
        if row is not None:
            self._set_text_lines(int(row[0].split(":")[0]) + delta, self._top_text_line())

    def _set_text_lines(self, count: int, top: int) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (TEXT_LINES, f"{count}:{top}"))

    def invalidations(self) -> list[tuple[int, int]]:
        """``(node id, clip it was superseded at)`` of every superseded text node."""
        q = "SELECT id, invalidated_at FROM nodes WHERE invalidated_at IS NOT NULL"
        return [(int(i), int(c)) for i, c in self.conn.execute(q)]

    def weight(self, node_id: int) -> float:
        row = self.conn.execute("SELECT weight FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return float(row[0]) if row else 0.0

    def insert_text_nodes(self, rows: Sequence[tuple]) -> None:
        """rows: ``(id, video_id, kind, clip, text, weight, valid_from, vector_blob[, meta dict])``."""
        c = self.conn
        c.executemany(
            "INSERT INTO nodes (id, video_id, kind, clip, text, weight, valid_from, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(*r[:7], json.dumps(r[8], ensure_ascii=False) if len(r) > 8 and r[8] else None) for r in rows],
        )
        c.executemany("INSERT INTO vectors (node_id, vec) VALUES (?, ?)", [(r[0], r[7]) for r in rows])
        if self.has_lexical:
            c.executemany("INSERT INTO lines_fts (rowid, text) VALUES (?, ?)", [(r[0], r[4]) for r in rows])
        self._count_text_lines(len(rows))

    def insert_entity_node(self, node_id: int, video_id: int, kind: NodeKind, clip: int, meta: dict | None) -> None:
        self.conn.execute(
            "INSERT INTO nodes (id, video_id, kind, clip, weight, meta) VALUES (?, ?, ?, ?, 0, ?)",
            (node_id, video_id, int(kind), clip, json.dumps(meta) if meta else None),
        )

    def bump_weight(self, node_id: int, delta: float) -> None:
        self.conn.execute("UPDATE nodes SET weight = weight + ? WHERE id = ?", (delta, node_id))

    def set_invalidated(self, node_id: int, by: int | None, at_clip: int | None) -> None:
        self.conn.execute("UPDATE nodes SET invalidated_by = ?, invalidated_at = ? WHERE id = ?", (by, at_clip, node_id))

    def update_text(self, node_id: int, text: str, vector: np.ndarray | None) -> None:
        if self.has_lexical:
            self._unindex_lines([node_id])
            self.conn.execute("INSERT INTO lines_fts (rowid, text) VALUES (?, ?)", (node_id, text))
        self.conn.execute("UPDATE nodes SET text = ? WHERE id = ?", (text, node_id))
        if vector is not None:
            self.conn.execute("UPDATE vectors SET vec = ? WHERE node_id = ?", (vec_to_blob(vector), node_id))

    # ------------------------------------------------------------------ edges
    def add_edges(self, rows: Iterable[tuple[int, int, float]]) -> None:
        self.conn.executemany(
            "INSERT INTO edges (text_id, entity_id, weight) VALUES (?, ?, ?)"
            " ON CONFLICT (text_id, entity_id) DO UPDATE SET weight = weight + excluded.weight",
            list(rows),
        )

    def bump_edges(self, text_id: int, delta: float) -> None:
        """Add ``delta`` to every edge of a text node; weights never go below zero."""
        self.conn.execute("UPDATE edges SET weight = MAX(0, weight + ?) WHERE text_id = ?", (delta, text_id))

    def edges_of_text(self, text_ids: Iterable[int]) -> dict[int, dict[int, float]]:
        out: dict[int, dict[int, float]] = {}
        for chunk in _chunks(sorted(set(text_ids))):
            q = f"SELECT text_id, entity_id, weight FROM edges WHERE text_id IN ({','.join('?' * len(chunk))})"
            for t, e, w in self.conn.execute(q, chunk):
                out.setdefault(int(t), {})[int(e)] = float(w)
        return out

    def texts_linked_to(self, entity_ids: Iterable[int]) -> list[int]:
        out: set[int] = set()
        for chunk in _chunks(sorted(set(entity_ids))):
            q = f"SELECT text_id FROM edges WHERE entity_id IN ({','.join('?' * len(chunk))})"
            out.update(int(r[0]) for r in self.conn.execute(q, chunk))
        return sorted(out)

    # ------------------------------------------------------------------ entity payloads
    def entity_embeddings(self, node_id: int) -> list[tuple[int, int | None, float | None, np.ndarray]]:
        q = "SELECT slot, clip, quality, vec FROM entity_embeddings WHERE node_id = ? ORDER BY slot"
        return [(int(s), c, q_, blob_to_vec(v)) for s, c, q_, v in self.conn.execute(q, (node_id,))]

    def all_entity_embeddings(self, kind: NodeKind, video_id: int | None = None) -> dict[int, np.ndarray]:
        q = (
            "SELECT e.node_id, e.vec FROM entity_embeddings e JOIN nodes n ON n.id = e.node_id"
            " WHERE n.kind = ?" + (" AND n.video_id = ?" if video_id is not None else "") + " ORDER BY e.node_id, e.slot"
        )
        args = (int(kind),) if video_id is None else (int(kind), video_id)
        grouped: dict[int, list[np.ndarray]] = {}
        for node_id, blob in self.conn.execute(q, args):
            grouped.setdefault(int(node_id), []).append(blob_to_vec(blob))
        return {k: np.stack(v) for k, v in grouped.items()}

    def replace_entity_embeddings(self, node_id: int, rows: Sequence[tuple[int | None, float | None, np.ndarray]]) -> None:
        self.conn.execute("DELETE FROM entity_embeddings WHERE node_id = ?", (node_id,))
        self.conn.executemany(
            "INSERT INTO entity_embeddings (node_id, slot, clip, quality, vec) VALUES (?, ?, ?, ?, ?)",
            [(node_id, i, c, q, vec_to_blob(v)) for i, (c, q, v) in enumerate(rows)],
        )

    def fold_entity(self, gone: int, into: int, at_clip: int, evidence: dict | None = None) -> None:
        """Make entity ``gone`` part of ``into`` (the same person, found out later): its sightings, speech and
        line edges move over, the node goes, and ``merged_entities`` keeps ``gone -> into`` so that tags
        already written (``<voice_gone>``) still resolve; ``evidence`` (what the fold was decided on) is kept with
        it. Embeddings and crops are the caller's to move."""
        c = self.conn
        c.execute("CREATE TABLE IF NOT EXISTS merged_entities (node_id INTEGER PRIMARY KEY, into_id INTEGER NOT NULL,"
                  " video_id INTEGER NOT NULL, clip INTEGER, evidence TEXT)")
        if "evidence" not in {row[1] for row in c.execute("PRAGMA table_info(merged_entities)")}:
            c.execute("ALTER TABLE merged_entities ADD COLUMN evidence TEXT")  # folds from before kept no evidence
        (video_id,) = c.execute("SELECT video_id FROM nodes WHERE id = ?", (gone,)).fetchone()
        c.execute("INSERT OR IGNORE INTO sightings (node_id, clip) SELECT ?, clip FROM sightings WHERE node_id = ?",
                  (into, gone))
        c.execute("UPDATE nodes SET weight = (SELECT count(*) FROM sightings WHERE node_id = ?) WHERE id = ?",
                  (into, into))
        c.execute("UPDATE voice_segments SET node_id = ? WHERE node_id = ?", (into, gone))
        self.add_edges(c.execute("SELECT text_id, ?, weight FROM edges WHERE entity_id = ?", (into, gone)).fetchall())
        c.execute("UPDATE merged_entities SET into_id = ? WHERE into_id = ?", (into, gone))
        self.delete_nodes([gone])
        c.execute("INSERT OR REPLACE INTO merged_entities (node_id, into_id, video_id, clip, evidence)"
                  " VALUES (?, ?, ?, ?, ?)", (gone, into, video_id, at_clip,
                                              None if evidence is None else json.dumps(evidence, sort_keys=True)))

    def split_entity(self, node: int, clips: Sequence[int], new: int) -> None:
        """Move entity ``node``'s part in ``clips`` to a new node ``new`` of its kind (one node found to hold two
        people): its sightings, speech, snapshots and crops of those clips, and the links of those clips' lines.
        Lines that superseded each other only by being about this one node are both in force again. The
        reverse of :meth:`fold_entity`; the lines' tags are the caller's to rewrite (and caches to drop)."""
        c = self.conn
        video_id, kind, meta = c.execute("SELECT video_id, kind, meta FROM nodes WHERE id = ?", (node,)).fetchone()
        moved = sorted(set(int(x) for x in clips))
        marks = ",".join("?" * len(moved))
        c.execute("INSERT INTO nodes (id, video_id, kind, clip, weight, meta) VALUES (?, ?, ?, ?, 0, ?)",
                  (new, video_id, kind, moved[0], meta))
        for table in ("sightings", "voice_segments"):
            c.execute(f"UPDATE {table} SET node_id = ? WHERE node_id = ? AND clip IN ({marks})", (new, node, *moved))
        snapshots = self.entity_embeddings(node)
        self.replace_entity_embeddings(node, [(k, q, v) for _, k, q, v in snapshots if k not in moved])
        self.replace_entity_embeddings(new, [(k, q, v) for _, k, q, v in snapshots if k in moved])
        crops = self.crops(node)
        self.replace_crops(node, [row for row in crops if row[0] not in moved])
        self.replace_crops(new, [row for row in crops if row[0] in moved])
        c.execute(f"UPDATE edges SET entity_id = ? WHERE entity_id = ? AND text_id IN"
                  f" (SELECT id FROM nodes WHERE video_id = ? AND clip IN ({marks}))", (new, node, video_id, *moved))
        # a line that superseded another only because both were about this node (one of them now about the new
        # one) had no right to: both are in force again
        line, by = (f"EXISTS (SELECT 1 FROM edges WHERE text_id = n.{column} AND entity_id = ?)"
                    for column in ("id", "invalidated_by"))
        c.execute(f"UPDATE nodes SET invalidated_by = NULL, invalidated_at = NULL WHERE id IN (SELECT n.id FROM nodes n"
                  f" WHERE n.video_id = ? AND n.invalidated_by IS NOT NULL AND"
                  f" (({line} AND {by}) OR ({by} AND {line})))", (video_id, node, new, node, new))
        for kept in (node, new):
            c.execute("UPDATE nodes SET weight = (SELECT count(*) FROM sightings WHERE node_id = ?),"
                      " clip = COALESCE((SELECT min(clip) FROM sightings WHERE node_id = ?), clip) WHERE id = ?",
                      (kept, kept, kept))

    def repoint_fold(self, gone: int, into: int, evidence: dict | None) -> None:
        """Tags of the folded-away ``gone`` resolve to ``into`` from now on (a fold undone: see
        :meth:`split_entity`); ``evidence`` replaces the fold's record."""
        self.conn.execute("UPDATE merged_entities SET into_id = ?, evidence = ? WHERE node_id = ?",
                          (into, None if evidence is None else json.dumps(evidence, sort_keys=True), gone))

    def folds(self, video_id: int) -> list[dict]:
        """The video's folds in the order made: ``{gone, into, clip, evidence}`` (evidence None for a fold made
        before folds kept theirs)."""
        if not self._has_merges():
            return []
        has = "evidence" in {row[1] for row in self.conn.execute("PRAGMA table_info(merged_entities)")}
        q = (f"SELECT node_id, into_id, clip, {'evidence' if has else 'NULL'} FROM merged_entities WHERE video_id = ?"
             " ORDER BY clip, node_id")
        return [{"gone": int(g), "into": int(i), "clip": c, "evidence": json.loads(e) if e else None}
                for g, i, c, e in self.conn.execute(q, (video_id,))]

    # ------------------------------------------------------------------ a person's identity corrections
    def add_correction(self, video_id: int, action: str, a: int, b: int | None = None, value: str | None = None) -> int:
        """Store a person's correction of who is who (``same``, ``apart`` or ``name``); returns its number."""
        with self.transaction() as c:
            c.execute("CREATE TABLE IF NOT EXISTS corrections (id INTEGER PRIMARY KEY, video_id INTEGER NOT NULL,"
                      " action TEXT NOT NULL, a INTEGER NOT NULL, b INTEGER, value TEXT, undone INTEGER DEFAULT 0)")
            cur = c.execute("INSERT INTO corrections (video_id, action, a, b, value) VALUES (?, ?, ?, ?, ?)",
                            (video_id, action, a, b, value))
            return int(cur.lastrowid)

    def corrections(self, video_id: int, *, undone: bool = False) -> list[dict]:
        """A video's corrections in the order made (with ``undone``, those taken back too)."""
        if self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'corrections'").fetchone() is None:
            return []
        q = "SELECT id, action, a, b, value, undone FROM corrections WHERE video_id = ?" + ("" if undone else
                                                                                         " AND undone = 0")
        return [{"id": int(i), "action": act, "a": int(a), "b": None if b is None else int(b), "value": v,
                 "undone": bool(u)} for i, act, a, b, v, u in self.conn.execute(q + " ORDER BY id", (video_id,))]

    def undo_correction(self, video_id: int, number: int) -> bool:
        """Take correction ``number`` back; False when the video has no such correction in force."""
        if not self.corrections(video_id):
            return False
        with self.transaction() as c:
            cur = c.execute("UPDATE corrections SET undone = 1 WHERE id = ? AND video_id = ? AND undone = 0",
                            (number, video_id))
            return cur.rowcount > 0

    def merged_entities(self, video_id: int) -> dict[int, int]:
        """``{gone: into}`` for the entities of a video folded into others (see :meth:`fold_entity`)."""
        if not self._has_merges():  # a DB that never folded one has no such table
            return {}
        rows = self.conn.execute("SELECT node_id, into_id FROM merged_entities WHERE video_id = ?", (video_id,))
        return {int(a): int(b) for a, b in rows}

    def crops(self, node_id: int) -> list[tuple[int | None, float | None, bytes]]:
        q = "SELECT clip, quality, jpeg FROM crops WHERE node_id = ? ORDER BY slot"
        return [(c, q_, bytes(j)) for c, q_, j in self.conn.execute(q, (node_id,))]

    def replace_crops(self, node_id: int, rows: Sequence[tuple[int | None, float | None, bytes]]) -> None:
        self.conn.execute("DELETE FROM crops WHERE node_id = ?", (node_id,))
        self.conn.executemany(
            "INSERT INTO crops (node_id, slot, clip, quality, jpeg) VALUES (?, ?, ?, ?, ?)",
            [(node_id, i, c, q, j) for i, (c, q, j) in enumerate(rows)],
        )

    def add_sighting(self, node_id: int, clip: int) -> bool:
        cur = self.conn.execute("INSERT OR IGNORE INTO sightings (node_id, clip) VALUES (?, ?)", (node_id, clip))
        return cur.rowcount > 0

    def sightings(self, video_id: int) -> dict[int, list[int]]:
        q = "SELECT s.node_id, s.clip FROM sightings s JOIN nodes n ON n.id = s.node_id WHERE n.video_id = ? ORDER BY s.node_id, s.clip"
        out: dict[int, list[int]] = {}
        for node_id, clip in self.conn.execute(q, (video_id,)):
            out.setdefault(int(node_id), []).append(int(clip))
        return out

    def add_voice_segments(self, node_id: int, segments: Iterable[VoiceSegment]) -> None:
        self.conn.executemany(
            'INSERT INTO voice_segments (node_id, clip, start, "end", text) VALUES (?, ?, ?, ?, ?)',
            [(node_id, s.clip, s.start, s.end, s.text) for s in segments],
        )

    def voice_segments(self, video_id: int) -> dict[int, list[VoiceSegment]]:
        q = (
            'SELECT s.node_id, s.clip, s.start, s."end", s.text FROM voice_segments s'
            " JOIN nodes n ON n.id = s.node_id WHERE n.video_id = ? ORDER BY s.node_id, s.clip, s.start"
        )
        out: dict[int, list[VoiceSegment]] = {}
        for node_id, clip, start, end, text in self.conn.execute(q, (video_id,)):
            out.setdefault(int(node_id), []).append(VoiceSegment(int(clip), float(start), float(end), text))
        return out

    # ------------------------------------------------------------------ deletion
    def delete_nodes(self, node_ids: Iterable[int]) -> None:
        """Delete nodes with everything attached to them; deleted pages are zeroed (secure delete)."""
        ids = sorted(set(node_ids))
        c = self.conn
        c.execute("PRAGMA secure_delete = ON")
        if self.has_lexical:
            self._unindex_lines(ids)
        merges = self._has_merges()
        lines = 0
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            lines += int(c.execute(f"SELECT count(*) FROM vectors WHERE node_id IN ({marks})", chunk).fetchone()[0])
            for table, column in (
                *((("records", "node_id"),) if self.has_records else ()),
                ("edges", "text_id"), ("edges", "entity_id"), ("vectors", "node_id"),
                ("entity_embeddings", "node_id"), ("crops", "node_id"), ("sightings", "node_id"),
                ("voice_segments", "node_id"),
            ):
                c.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", chunk)
            c.execute(f"UPDATE nodes SET invalidated_by = NULL, invalidated_at = NULL WHERE invalidated_by IN ({marks})", chunk)
            c.execute(f"DELETE FROM nodes WHERE id IN ({marks})", chunk)
            if merges:  # a forgotten person's folded-in ids go with them
                c.execute(f"DELETE FROM merged_entities WHERE into_id IN ({marks}) OR node_id IN ({marks})", chunk * 2)
        self._count_text_lines(-lines)

    def _unindex_lines(self, node_ids: Sequence[int]) -> None:
        """Take lines out of the lexical index (before their text changes or goes: FTS5 needs it)."""
        for chunk in _chunks(sorted(set(node_ids))):
            q = f"SELECT id, text FROM nodes WHERE id IN ({','.join('?' * len(chunk))}) AND text IS NOT NULL"
            rows = list(self.conn.execute(q, chunk))
            self.conn.executemany("INSERT INTO lines_fts (lines_fts, rowid, text) VALUES ('delete', ?, ?)", rows)

    def rebuild_lexical(self) -> None:
        """Rewrite the lexical index from the lines (after a forget: no term of a removed line survives
        in its pages)."""
        if self.has_lexical:
            self.conn.execute("INSERT INTO lines_fts (lines_fts) VALUES ('rebuild')")

    # ------------------------------------------------------------------ lexical search
    def lexical_search(self, match: str, id_ranges: Sequence[tuple[int, int]] | None, limit: int,
                       ) -> list[tuple[int, float]]:
        """``(node id, BM25 score)`` of the best ``limit`` lines for an FTS5 ``match`` expression, higher is
        better; ``id_ranges`` keeps node ids within these inclusive ranges (a video's lines)."""
        if not self.has_lexical:
            return []
        q = "SELECT rowid, -rank FROM lines_fts WHERE lines_fts MATCH ?"  # rank: bm25(), lower is better
        out: list[tuple[int, float]] = []
        for lo_hi in id_ranges if id_ranges is not None else [None]:
            args: tuple = (match,)
            clause = ""
            if lo_hi is not None:
                clause, args = " AND rowid BETWEEN ? AND ?", (match, int(lo_hi[0]), int(lo_hi[1]))
            out.extend((int(i), float(s)) for i, s in self.conn.execute(q + clause + " ORDER BY rank LIMIT ?",
                                                                          (*args, int(limit))))
        out.sort(key=lambda r: -r[1])
        return out[:limit]

    def term_documents(self, terms: Sequence[str]) -> dict[str, int]:
        """How many lines hold each (already tokenized) term: what a lexical query over it costs."""
        if not self.has_lexical or not terms:
            return {t: 0 for t in terms}
        with self._lock:
            self.conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.lines_vocab USING fts5vocab(main, lines_fts, row)")
        q = "SELECT doc FROM temp.lines_vocab WHERE term = ?"
        return {t: int((self.conn.execute(q, (t,)).fetchone() or (0,))[0]) for t in terms}

    # ------------------------------------------------------------------ text records
    def record_nodes(self, video_id: int, records: Sequence[str], procedural: bool = False) -> dict[str, int]:
        """``record id -> node id`` of the given records already stored for a text source, among its procedural
        records or its others (two namespaces: a lesson may share an id with a record)."""
        if not self.has_records:
            return {}
        prefix = _PROCEDURAL_KEY if procedural else ""
        out: dict[str, int] = {}
        for start in range(0, len(records), 900):
            chunk = [prefix + r for r in records[start : start + 900]]
            q = f"SELECT record, node_id FROM records WHERE video_id = ? AND record IN ({','.join('?' * len(chunk))})"
            out.update({r[len(prefix):]: int(n) for r, n in self.conn.execute(q, (video_id, *chunk))})
        return out

    def insert_records(self, rows: Iterable[tuple[int, str, int, bool]]) -> None:
        """rows: ``(video_id, record id, node id, procedural)``."""
        self.conn.executemany("INSERT INTO records (video_id, record, node_id) VALUES (?, ?, ?)",
                              [(v, (_PROCEDURAL_KEY if p else "") + r, n) for v, r, n, p in rows])

    def node_meta(self, node_ids: Iterable[int]) -> dict[int, dict]:
        """The JSON ``meta`` of nodes that have one (a text record's id, time, speaker, session)."""
        out: dict[int, dict] = {}
        for chunk in _chunks(sorted(set(node_ids))):
            q = f"SELECT id, meta FROM nodes WHERE meta IS NOT NULL AND id IN ({','.join('?' * len(chunk))})"
            out.update({int(i): json.loads(m) for i, m in self.conn.execute(q, chunk)})
        return out

    def speakers(self, video_id: int) -> dict[str, int]:
        """``name -> node id`` of a text source's speakers."""
        q = "SELECT json_extract(meta, '$.name'), id FROM nodes WHERE video_id = ? AND kind = ? ORDER BY id"
        return {str(n): int(i) for n, i in self.conn.execute(q, (video_id, int(NodeKind.SPEAKER))) if n is not None}

    def session_clip(self, video_id: int, session: str) -> int | None:
        """The clip a text source's session was stored in, None if it was not."""
        q = "SELECT clip FROM nodes WHERE video_id = ? AND meta IS NOT NULL AND json_extract(meta, '$.session') = ? LIMIT 1"
        row = self.conn.execute(q, (video_id, session)).fetchone()
        return None if row is None else int(row[0])

    def last_clip(self, video_id: int) -> int:
        """The highest clip number of a video, -1 before its first."""
        row = self.conn.execute("SELECT MAX(clip) FROM clips WHERE video_id = ?", (video_id,)).fetchone()
        return -1 if row[0] is None else int(row[0])

    def delete_voice_segments(self, rowids: Iterable[int]) -> None:
        for chunk in _chunks(sorted(set(rowids))):
            self.conn.execute(f"DELETE FROM voice_segments WHERE rowid IN ({','.join('?' * len(chunk))})", chunk)

    # ------------------------------------------------------------------ finding content (forgetting)
    def texts_containing(self, video_id: int, word: str) -> list[tuple[int, str]]:
        """``(id, text)`` of a video's text nodes whose text contains ``word`` (ASCII case folded, as
        SQLite's LIKE does; callers confirm with their own pattern)."""
        q = f"SELECT id, text FROM nodes WHERE video_id = ? AND kind IN {_TEXT} AND text LIKE ? ESCAPE '\\'"
        return [(int(i), t) for i, t in self.conn.execute(q, (video_id, f"%{_like_escape(word)}%"))]

    def segments_containing(self, video_id: int, word: str) -> list[tuple[int, int, str]]:
        """``(rowid, voice node id, text)`` of a video's transcript segments that contain ``word`` (as above)."""
        q = ("SELECT s.rowid, s.node_id, s.text FROM voice_segments s JOIN nodes n ON n.id = s.node_id"
             " WHERE n.video_id = ? AND s.text LIKE ? ESCAPE '\\'")
        return [(int(i), int(n), t) for i, n, t in self.conn.execute(q, (video_id, f"%{_like_escape(word)}%"))]

    def segment_texts(self, node_ids: Iterable[int]) -> list[str]:
        out: list[str] = []
        for chunk in _chunks(sorted(set(node_ids))):
            q = f"SELECT text FROM voice_segments WHERE node_id IN ({','.join('?' * len(chunk))})"
            out.extend(r[0] for r in self.conn.execute(q, chunk))
        return out

    def text_vector_blobs(self, node_ids: Iterable[int]) -> list[bytes]:
        out: list[bytes] = []
        for chunk in _chunks(sorted(set(node_ids))):
            q = f"SELECT vec FROM vectors WHERE node_id IN ({','.join('?' * len(chunk))})"
            out.extend(bytes(r[0]) for r in self.conn.execute(q, chunk))
        return out

    def entity_blobs(self, node_ids: Iterable[int]) -> list[bytes]:
        """Raw embedding and crop blobs of entity nodes."""
        out: list[bytes] = []
        for chunk in _chunks(sorted(set(node_ids))):
            marks = ",".join("?" * len(chunk))
            for q in (f"SELECT vec FROM entity_embeddings WHERE node_id IN ({marks})",
                      f"SELECT jpeg FROM crops WHERE node_id IN ({marks})"):
                out.extend(bytes(r[0]) for r in self.conn.execute(q, chunk))
        return out

    def holds_bytes(self, needle: bytes) -> bool:
        """Whether any stored value still contains ``needle`` (a full scan: call it for few needles)."""
        checks = (
            ("nodes", "text"), ("voice_segments", "text"), ("vectors", "vec"), ("entity_embeddings", "vec"),
            ("crops", "jpeg"), ("videos", "name"), ("videos", "path"), ("videos", "meta"), ("meta", "value"),
        )
        for table, column in checks:
            q = f"SELECT 1 FROM {table} WHERE instr(CAST({column} AS BLOB), ?) > 0 LIMIT 1"
            if self.conn.execute(q, (needle,)).fetchone():
                return True
        return False

    def delete_meta(self, key: str) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM meta WHERE key = ?", (key,))

    # ------------------------------------------------------------------ stats
    def counts(self) -> dict[str, Any]:
        c = self.conn
        kinds = {NodeKind(k).label: int(n) for k, n in c.execute("SELECT kind, COUNT(*) FROM nodes GROUP BY kind")}
        return {
            "videos": int(c.execute("SELECT COUNT(*) FROM videos").fetchone()[0]),
            "clips": int(c.execute("SELECT COUNT(*) FROM clips").fetchone()[0]),
            "nodes": {k.label: kinds.get(k.label, 0) for k in NodeKind},
            "edges": int(c.execute("SELECT COUNT(*) FROM edges").fetchone()[0]),
        }


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _chunks(items: Sequence[int], size: int = 900) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
