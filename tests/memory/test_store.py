"""Persistence: round trip, concurrent readers, crash safety, corrupt and foreign files."""

import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from m3agent.memory import (
    CorruptDatabaseError,
    DatabaseNotFoundError,
    ForeignDatabaseError,
    MemoryGraph,
    SchemaVersionError,
)
from m3agent.memory.model import NodeKind
from m3agent.memory.store import SQLiteStore
from m3agent.memory.writer import ClipAlreadyStoredError


def test_round_trip_through_sqlite(kitchen, db_path, embedder):
    before = kitchen.export()
    hits_before = kitchen.search("plays guitar on the sofa", threshold=0.1).to_dict()
    kitchen.close()
    reopened = MemoryGraph.open(db_path, embedder=embedder)
    assert reopened.export() == before
    assert reopened.search("plays guitar on the sofa", threshold=0.1).to_dict() == hits_before
    assert reopened.store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reopened.close()


def test_export_shape(kitchen):
    data = kitchen.export()
    assert set(data) >= {"schema", "video", "clips", "nodes", "characters"}
    assert data["video"]["clip_seconds"] == 30.0
    assert [c["id"] for c in data["clips"]] == [0, 1, 2, 3]
    by_id = {n["id"]: n for n in data["nodes"]}
    a, av = kitchen.ids["alice_face"], kitchen.ids["alice_voice"]
    assert by_id[a]["kind"] == "face" and by_id[a]["clips"] == [0, 1]  # where the face was seen
    assert by_id[av]["segments"] == [{"clip": 0, "start": 3.0, "end": 5.0, "text": "hi I am Alice"}]
    assert data["characters"][f"character_{a}"] == [f"face_{a}", f"voice_{av}"]
    assert data["names"] == {f"character_{a}": "Alice"}
    eq = [n for n in data["nodes"] if n["kind"] == "semantic" and n["text"].startswith("Equivalence")]
    assert len(eq) == 1 and eq[0]["weight"] == 2.0  # the repeat in clip 2 reinforced, not duplicated
    assert by_id[kitchen.ids["fridge_full"]]["invalidated_by"] == kitchen.ids["fridge_empty"]


def test_clip_written_once(kitchen):
    with pytest.raises(ClipAlreadyStoredError):
        with kitchen.clip(kitchen.video, 0, 0, 30) as b:
            b.episodic("again")
    assert kitchen.has_clip(kitchen.video, 3) and not kitchen.has_clip(kitchen.video, 4)


WRITER = textwrap.dedent("""
    import sys, time
    from m3agent.memory import MemoryGraph
    from m3agent.models.embed.hashing import HashingEmbedder
    g = MemoryGraph.open(sys.argv[1], embedder=HashingEmbedder(dim=512))
    v = g.add_video("live")
    for clip in range(int(sys.argv[2])):
        with g.clip(v, clip, clip * 30, clip * 30 + 30) as b:
            for i in range(50):
                b.episodic(f"clip {clip} line {i} the cat sat on mat number {i}")
    g.close()
""")


def sqlite_file(path, *statements):
    """An SQLite file another application wrote (rollback journal, its own tables)."""
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def test_readers_see_whole_clips_while_a_writer_writes(db_path, embedder):
    MemoryGraph.open(db_path, embedder=embedder).close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db_path), "40"])
    reader = MemoryGraph.open(db_path, embedder=embedder, readonly=True)
    seen_counts = set()
    try:
        deadline = time.time() + 60
        while writer.poll() is None and time.time() < deadline:
            rows = reader.store.conn.execute(
                "SELECT c.clip, (SELECT COUNT(*) FROM nodes n WHERE n.video_id = c.video_id AND n.clip = c.clip)"
                " FROM clips c"
            ).fetchall()
            for _clip, count in rows:
                assert count == 50  # a clip is visible whole or not at all
            seen_counts.add(len(rows))
            if rows:
                result = reader.search("the cat sat on the mat", video="live", threshold=0.1)
                assert len(result.clips) <= 2
        assert writer.wait(60) == 0
    finally:
        writer.kill()
    assert len(seen_counts) > 2  # the reader really read between commits
    reader.refresh()
    assert len(reader.store.clips(1)) == 40
    assert len(reader.vectors) == 2000  # refresh picked up the lines written meanwhile
    reader.close()


CRASHER = textwrap.dedent("""
    import os, sys
    from m3agent.memory import MemoryGraph
    from m3agent.memory.store import SQLiteStore
    from m3agent.models.embed.hashing import HashingEmbedder
    g = MemoryGraph.open(sys.argv[1], embedder=HashingEmbedder(dim=512))
    v = g.add_video("crash")
    with g.clip(v, 0, 0, 30) as b:
        b.episodic("a clip that lands")
    real = SQLiteStore.insert_clip
    def die(self, *a, **k):  # nodes, vectors and edges of clip 1 are written; the commit never comes
        os._exit(3)
    SQLiteStore.insert_clip = die
    with g.clip(v, 1, 30, 60) as b:
        f = b.face([[0.1] * 128])
        b.episodic(f"<face_{f}> is about to vanish")
""")


def test_crash_mid_clip_leaves_nothing_half_written(db_path, embedder):
    proc = subprocess.run([sys.executable, "-c", CRASHER, str(db_path)])
    assert proc.returncode == 3
    graph = MemoryGraph.open(db_path, embedder=embedder)
    assert graph.store.integrity_check() == []
    assert [c.id for c in graph.store.clips(1)] == [0]
    texts = [n.text for n in graph.store.text_nodes(1)]
    assert texts == ["a clip that lands"]
    assert graph.store.entity_rows() == []
    # resume: clip 1 can now be written normally
    with graph.clip(1, 1, 30, 60) as b:
        b.episodic("clip one after the crash")
    assert [c.id for c in graph.store.clips(1)] == [0, 1]
    graph.close()


def test_missing_empty_garbage_truncated_foreign_and_newer_files(tmp_path, kitchen, db_path):
    with pytest.raises(DatabaseNotFoundError):
        SQLiteStore(tmp_path / "nope.db", create=False)
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(CorruptDatabaseError):
        SQLiteStore(empty, create=False)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(CorruptDatabaseError):
        SQLiteStore(garbage)
    kitchen.close()
    data = db_path.read_bytes()
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(data[:100] + b"\x00" * 50)
    with pytest.raises(CorruptDatabaseError):
        MemoryGraph.open(truncated).export()
    foreign = sqlite_file(tmp_path / "foreign.db", "CREATE TABLE meta (key TEXT, value TEXT)",
                          "INSERT INTO meta VALUES ('app', 'someone-else')")
    with pytest.raises(ForeignDatabaseError):
        SQLiteStore(foreign)
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match="upgrade"):
        SQLiteStore(db_path)


def test_db_size_stays_small_per_text_node(tmp_path, embedder):
    graph = MemoryGraph.open(tmp_path / "size.db", embedder=embedder)
    video = graph.add_video("v")
    for clip in range(20):
        with graph.clip(video, clip, clip * 30, clip * 30 + 30) as b:
            f = b.face([[0.0] * 128])
            for i in range(50):
                b.episodic(f"<face_{f}> does thing {i} in clip {clip}")
    graph.close()
    per_node = (tmp_path / "size.db").stat().st_size / 1000
    # the row, edges and page slack stay under 1 KiB, plus ~100 bytes of the lexical index's positions
    assert per_node - 512 * 4 < 1024 + 128, per_node


def test_precomputed_vectors_without_an_embedder(tmp_path):
    graph = MemoryGraph.open(tmp_path / "plain.db")
    video = graph.add_video("v")
    with graph.clip(video, 0, 0, 30) as b:
        b.episodic("a line with its own vector", vector=[1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="has 2 dims, DB uses 3"):
        with graph.clip(video, 1, 30, 60) as b:
            b.episodic("a vector of the wrong size", vector=[1.0, 0.0])
    hits = graph.vectors.top_lines([[1.0, 0.0, 0.0]], [video], None, 5)
    assert hits.ids.tolist() == [0] and graph.store.meta()["dim"] == "3"
    graph.close()


def _fill_disk(store: SQLiteStore, extra_pages: int = 0) -> None:
    """Make the DB file unable to grow, as a full disk does (SQLite then fails with SQLITE_FULL)."""
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages + extra_pages}")


def test_full_disk_is_reported_with_the_path_and_loses_nothing(db_path, embedder):
    from m3agent.memory import DiskFullError

    graph = MemoryGraph.open(db_path, embedder=embedder)
    video = graph.add_video("v")
    for clip in range(2):
        with graph.clip(video, clip, 30 * clip, 30 * clip + 30) as b:
            b.episodic(f"clip {clip} line")
    _fill_disk(graph.store)
    with pytest.raises(DiskFullError, match=rf"^{db_path}: disk full .*intact") as info:
        with graph.clip(video, 2, 60, 90) as b:
            for k in range(200):
                b.episodic(f"a long line number {k} " + "words " * 40)
    assert "\n" not in str(info.value)
    graph.close()
    graph = MemoryGraph.open(db_path, embedder=embedder)  # what was stored before is intact
    assert [c.id for c in graph.clips(video)] == [0, 1] and graph.integrity_check() == []
    with graph.clip(video, 2, 60, 90) as b:  # with space again, memorization goes on from clip 2
        b.episodic("clip 2 line")
    assert [c.id for c in graph.clips(video)] == [0, 1, 2]
    graph.close()


def test_sqlite_errors_name_the_file_and_the_cause(tmp_path):
    from m3agent.memory import (
        CorruptDatabaseError,
        DatabaseBusyError,
        MemoryStoreError,
        ReadOnlyDatabaseError,
    )
    from m3agent.memory.store import store_error

    path = tmp_path / "m.db"

    def failure(message: str, name: str) -> sqlite3.Error:
        exc = sqlite3.OperationalError(message)
        exc.sqlite_errorname = name
        return exc

    assert isinstance(store_error(path, failure("attempt to write a readonly database", "SQLITE_READONLY")),
                      ReadOnlyDatabaseError)
    assert isinstance(store_error(path, PermissionError(13, "Permission denied")), ReadOnlyDatabaseError)
    assert isinstance(store_error(path, failure("database is locked", "SQLITE_BUSY")), DatabaseBusyError)
    assert isinstance(store_error(path, failure("database disk image is malformed", "SQLITE_CORRUPT")),
                      CorruptDatabaseError)
    other = store_error(path, failure("disk I/O error", "SQLITE_IOERR_WRITE"))
    assert type(other) is MemoryStoreError and str(path) in str(other) and "I/O error" in str(other)


def test_another_applications_sqlite_file_is_refused_unchanged(tmp_path):
    foreign = sqlite_file(tmp_path / "other.db", "CREATE TABLE contacts (name TEXT)",
                          "INSERT INTO contacts VALUES ('Ann')")
    before = foreign.read_bytes()
    with pytest.raises(ForeignDatabaseError):
        SQLiteStore(foreign)
    assert foreign.read_bytes() == before  # still in its rollback-journal mode, nothing written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]  # no lock, no WAL left behind


def test_integrity_check_sees_broken_vectors(kitchen, db_path):
    assert kitchen.integrity_check() == []
    node = kitchen.ids["fridge_empty"]
    kitchen.store.conn.execute("UPDATE vectors SET vec = ? WHERE node_id = ?",
                               (np.full(512, np.nan, np.float32).tobytes(), node))
    kitchen.store.conn.execute("UPDATE vectors SET vec = ? WHERE node_id = ?",
                               (np.ones(100, np.float32).tobytes(), kitchen.ids["alice_name"]))
    kitchen.store.conn.execute("UPDATE entity_embeddings SET vec = ? WHERE node_id = ?",
                               (np.ones(64, np.float32).tobytes(), kitchen.ids["bob_face"]))
    problems = " | ".join(kitchen.integrity_check())
    assert "1 text vectors hold NaN or infinity" in problems
    assert "1 text vectors are not 512-d" in problems
    assert f"face embeddings of 1 nodes differ in size from the rest (128-d): nodes [{kitchen.ids['bob_face']}]" in problems


def test_text_nodes_containing_a_word_in_any_case(kitchen):
    store = kitchen.store
    semantic = store.text_nodes(kitchen.video, kind=NodeKind.SEMANTIC)
    found = store.text_nodes(kitchen.video, kind=NodeKind.SEMANTIC, containing="EQUIVALENCE")
    assert [n.id for n in found] == [n.id for n in semantic if "equivalence" in n.text.lower()] and found
    assert [n.text for n in store.text_nodes(kitchen.video, containing="fridge is_")] == []  # _ is no wildcard
    assert len(store.text_nodes(kitchen.video, kind=NodeKind.SEMANTIC, containing="name")) == 1


def test_a_videos_characters_are_read_through_the_kind_index_which_older_dbs_get(kitchen, db_path, embedder):
    graph, video = kitchen, kitchen.video
    before = graph.characters(video).as_tags()
    assert before
    conn = graph.store.conn
    plans = [" ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + q, (video,)))
             for q in ("SELECT id FROM nodes WHERE kind IN (0, 1) AND video_id = ?",
                       "SELECT id FROM nodes WHERE kind IN (3) AND text LIKE '%equivalence%' AND video_id = ?")]
    assert all("nodes_by_kind" in plan for plan in plans), plans  # a video's few, not its every line
    conn.execute("DROP INDEX nodes_by_kind")  # a DB written before the index
    graph.close()
    graph = MemoryGraph.open(db_path, embedder=embedder, readonly=True)  # read as it is: scans, same answer
    assert graph.characters(video).as_tags() == before
    assert "nodes_by_kind" not in {r[0] for r in graph.store.conn.execute("SELECT name FROM sqlite_master")}
    graph.close()
    graph = MemoryGraph.open(db_path, embedder=embedder)  # the first writable open adds it
    assert "nodes_by_kind" in {r[0] for r in graph.store.conn.execute("SELECT name FROM sqlite_master")}
    assert graph.characters(video).as_tags() == before
    graph.close()
