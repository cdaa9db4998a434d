"""Forget means gone: from the rows, the WAL, the index cache and every other file beside the DB."""

import json
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from m3agent.cli import main
from m3agent.config import IndexConfig, MemoryConfig
from m3agent.memory import MemoryGraph, UnknownEntityError
from m3agent.memory.errors import DatabaseBusyError, DiskFullError
from m3agent.memory.forgetting import (
    SCRUB_PENDING,
    ForgetIncompleteError,
    files_beside,
    find_on_disk,
    name_pattern,
)
from m3agent.memory.store import SQLiteStore
from m3agent.memory.text_sources import TextRecord, parse_record
from tests.conftest import rand_vec

SECRETS = [b"12 Oak Street", b"4711", b"Alice", b"ALICECROP", b"opens the fridge", b"hi I am Alice"]


@pytest.fixture
def gossip(kitchen):
    """The kitchen episode, plus Bob telling others where Alice lives and her PIN."""
    a, bob = kitchen.ids["alice_face"], kitchen.ids["bob_face"]
    with kitchen.clip(kitchen.video, 4, 120, 150) as b:
        bob_voice = b.voice([rand_vec(9, 256)], segments=[(121.0, 126.0, "alice lives at 12 Oak Street, her PIN is 4711")])
        b.semantic(f"Equivalence: <face_{bob}>, <voice_{bob_voice}>")
        b.episodic(f"<voice_{bob_voice}> says: alice lives at 12 Oak Street, her PIN is 4711")
        b.episodic(f"<face_{bob}> waves at <face_{a}>")
    kitchen.ids["bob_voice"] = bob_voice
    return kitchen


def leftovers(db_path, secrets=SECRETS):
    return find_on_disk(files_beside(db_path), secrets)


def test_forget_by_name_removes_mentions_from_every_file(gossip, db_path, embedder):
    # an ANN cache beside the DB, built while Alice was remembered
    config = MemoryConfig(index=IndexConfig(ann_threshold=1))
    with MemoryGraph.open(db_path, config, embedder=embedder) as other:
        other.search("who opens the fridge", threshold=0.0)
    assert db_path.with_name(db_path.name + ".ivf").exists()
    assert leftovers(db_path)  # the secrets are on disk before

    report = gossip.forget(gossip.video, "alice")
    assert report["character"] == f"character_{gossip.ids['alice_face']}"
    assert len(report["removed_mentions"]) == 1 and report["removed_transcripts"] == 1
    texts = [n["text"] for n in gossip.export()["nodes"] if n["text"]]
    assert any(t.startswith("someone and <face_") for t in texts)  # shared lines keep what others did
    assert any("waves at someone" in t for t in texts)
    gossip.close()
    assert leftovers(db_path) == {}
    blob = b"".join(p.read_bytes() for p in files_beside(db_path))
    assert b"BOBCROP" in blob and b"plays guitar" in blob  # others are untouched


def test_keep_mentions_keeps_what_others_said(gossip, db_path):
    report = gossip.forget(gossip.video, f"character_{gossip.ids['alice_face']}", keep_mentions=True)
    assert report["removed_mentions"] == [] and report["removed_transcripts"] == 0
    gossip.close()
    found = leftovers(db_path)
    assert set(found) == {b"12 Oak Street", b"4711"}  # only in Bob's words


def test_names_that_are_ambiguous_or_unknown_are_refused(kitchen):
    with kitchen.clip(kitchen.video, 4, 120, 150) as b:
        carol = b.face([rand_vec(11, 128)])
        b.semantic(f"<face_{carol}>'s name is Alice")
    with pytest.raises(UnknownEntityError, match="several characters are called 'Alice'"):
        kitchen.forget(kitchen.video, "Alice")
    with pytest.raises(UnknownEntityError, match="no character called 'Zed'.*character_3"):
        kitchen.forget(kitchen.video, "Zed")
    with pytest.raises(UnknownEntityError, match="no <character_999>"):
        kitchen.forget(kitchen.video, "<character_999>")


def test_name_pattern_matches_whole_words_and_first_names():
    pattern = name_pattern(["Alice Smith"])
    assert pattern.search("I met alice yesterday") and pattern.search("Alice Smith called")
    assert not pattern.search("Malice aforethought")


READER = textwrap.dedent("""
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT COUNT(*) FROM nodes").fetchone()  # a read transaction holds its snapshot
    print("reading", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("COMMIT")
""")


def test_forget_waits_for_a_reader_or_fails_changing_nothing(kitchen, db_path):
    a = kitchen.ids["alice_face"]
    with kitchen.clip(kitchen.video, 4, 120, 150) as b:  # a write the reader's snapshot predates
        b.episodic("a late line")
    reader = subprocess.Popen([sys.executable, "-c", READER, str(db_path), "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "reading"
        with kitchen.clip(kitchen.video, 5, 150, 180) as b:
            b.episodic("written while the reader reads")
        with pytest.raises(DatabaseBusyError, match="being read by another process.*nothing was changed"):
            kitchen.forget(kitchen.video, f"character_{a}", wait=0.5)
        assert a in kitchen.characters(kitchen.video).members  # nothing changed
    finally:
        reader.kill()
        reader.wait()
    short = subprocess.Popen([sys.executable, "-c", READER, str(db_path), "1.5"], stdout=subprocess.PIPE, text=True)
    assert short.stdout.readline().strip() == "reading"
    started = time.monotonic()
    kitchen.forget(kitchen.video, f"character_{a}", wait=30)  # waits for the reader, then completes
    assert time.monotonic() - started > 0.5
    short.wait()
    kitchen.close()
    assert leftovers(db_path, [b"ALICECROP", b"opens the fridge"]) == {}


def test_a_stale_process_never_writes_the_forgotten_index_back(kitchen, db_path, embedder):
    stale = MemoryGraph.open(db_path, MemoryConfig(index=IndexConfig(ann_threshold=1)), embedder=embedder)
    stale.search("who opens the fridge", threshold=0.0)  # builds an index holding Alice's lines
    kitchen.forget(kitchen.video, f"character_{kitchen.ids['alice_face']}")
    stale.close()  # would save its index over the forget
    assert not db_path.with_name(db_path.name + ".ivf").exists()


def test_full_disk_during_forget_changes_nothing_and_says_so(kitchen, db_path, monkeypatch):
    a = kitchen.ids["alice_face"]

    def full(self, ids):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(SQLiteStore, "delete_voice_segments", lambda self, rows: full(self, rows))
    with pytest.raises(DiskFullError, match="disk full"):
        kitchen.forget(kitchen.video, f"character_{a}")
    monkeypatch.undo()
    assert a in kitchen.characters(kitchen.video).members
    assert kitchen.integrity_check() == []
    # no room to vacuum: secure delete has already zeroed the pages, so forgetting still completes
    def no_room(self):
        raise DiskFullError(f"{self.path}: disk full")

    monkeypatch.setattr(SQLiteStore, "vacuum", no_room)
    kitchen.forget(kitchen.video, f"character_{a}")
    kitchen.close()
    assert leftovers(db_path, [b"ALICECROP", b"opens the fridge", b"hi I am Alice"]) == {}


def test_an_interrupted_scrub_is_finished_by_the_next_writer(kitchen, db_path, embedder):
    kitchen.store.set_meta(SCRUB_PENDING, "1")
    kitchen.close()
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        assert SCRUB_PENDING not in graph.store.meta()


def test_a_copy_beside_the_db_is_named_not_silently_kept(kitchen, db_path):
    kitchen.store.checkpoint()
    backup = db_path.with_name(db_path.name + ".bak")
    backup.write_bytes(db_path.read_bytes())
    with pytest.raises(ForgetIncompleteError, match=r"memory.db.bak \(copies or backups of the DB\?\)"):
        kitchen.forget(kitchen.video, f"character_{kitchen.ids['alice_face']}")
    backup.unlink()
    kitchen.close()
    assert leftovers(db_path) == {}  # the DB itself was scrubbed


# ---------------------------------------------------------------------- a text source's speakers
CONVERSATION = [
    {"id": "alice-pin", "text": "my PIN is 4711, keep it secret", "speaker": "Alice", "session": "s1", "time": "1 May"},
    {"id": "bob-guitar", "text": "I play the bass guitar on Sundays", "speaker": "Bob", "session": "s1"},
    {"id": "bob-gossip", "text": "alice lives at 12 Oak Street", "speaker": "Bob", "session": "s1"},
    {"id": "alice-plants", "text": "I water the tomato plants every morning", "speaker": "Alice", "session": "s2"},
    {"id": "bob-pasta", "text": "I cooked pasta with basil tonight", "speaker": "Bob", "session": "s2"},
]
HER = [b"Alice", b"4711", b"12 Oak Street", b"tomato plants", b"alice-pin", b"alice-plants"]


def conversation():
    return [parse_record(r) for r in CONVERSATION]


@pytest.fixture
def chat(db_path, embedder):
    graph = MemoryGraph.open(db_path, embedder=embedder)
    graph.remember("chat", conversation())
    graph.source = graph.resolve_video("chat").id
    yield graph
    graph.close()


def test_a_speaker_is_a_character_found_by_name_or_id(chat):
    cards = {card.name: card for card in chat.character_cards("chat")}
    assert set(cards) == {"Alice", "Bob"} and cards["Bob"].lines == 3 and cards["Alice"].clips == [0, 1]
    alice = cards["Alice"].number
    assert chat.resolve_character("chat", "aLiCe") == alice == chat.resolve_character("chat", f"character_{alice}")
    assert [c.clip for c in chat.timeline("chat", alice)] == [0, 1]
    assert chat.export("chat")["names"][f"character_{alice}"] == "Alice"


def test_forgetting_a_speaker_leaves_nothing_of_her_and_keeps_the_others(chat, db_path, embedder):
    with MemoryGraph.open(db_path, MemoryConfig(index=IndexConfig(ann_threshold=1)), embedder=embedder) as other:
        other.search("secret PIN", video="chat", threshold=0.0)  # an index cache and a vector file beside the DB
    assert {p.name for p in files_beside(db_path)} >= {"memory.db.ivf", "memory.db.vec"}
    assert set(leftovers(db_path, HER)) == set(HER)

    report = chat.forget(chat.source, "alice")
    assert len(report["removed_entities"]) == 1 and len(report["removed_lines"]) == 3
    assert len(report["removed_mentions"]) == 1 and report["removed_records"] == 3
    assert [c.name for c in chat.character_cards("chat")] == ["Bob"]
    found = chat.search("who plays guitar", video="chat", lines=5).lines
    assert [line["id"] for line in found][:1] == ["bob-guitar"]
    assert "bob-gossip" not in {line["id"] for line in chat.search("Oak Street", video="chat", lines=5).lines}
    chat.close()
    assert leftovers(db_path, HER) == {}
    assert leftovers(db_path, [b"bass guitar", b"basil"]) != {}  # Bob's own lines stay


def test_records_forgotten_are_not_remembered_again(chat, db_path):
    chat.forget(chat.source, "Alice")
    again = chat.remember("chat", conversation())
    assert again.to_dict() == {"source": "chat", "added": 0, "already_stored": 2, "clips": 0, "forgotten": 3}
    with pytest.raises(UnknownEntityError, match="no character called 'Alice'"):
        chat.resolve_character("chat", "Alice")
    assert leftovers(db_path, HER) == {}
    later = chat.remember("chat", [TextRecord("alice-new", "hello again", speaker="Alice")])  # new records are new
    assert later.added == 1 and "Alice" in {c.name for c in chat.character_cards("chat")}


def test_keep_mentions_keeps_others_records(chat, db_path):
    report = chat.forget(chat.source, "Alice", keep_mentions=True)
    assert report["removed_mentions"] == [] and report["removed_records"] == 2
    assert chat.remember("chat", conversation()).to_dict()["forgotten"] == 2
    chat.close()
    assert set(leftovers(db_path, HER)) == {b"12 Oak Street"}  # Bob's words about her stay


def test_forget_a_speaker_through_the_cli(tmp_path, capsys):
    db, records = str(tmp_path / "text.db"), tmp_path / "r.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in CONVERSATION))
    hashing = ["--set", "embedder.backend=hashing"]
    remember = [*hashing, "remember", db, "--source", "chat", "--jsonl", str(records), "--quiet"]
    assert main(remember) == 0
    with MemoryGraph.open(db, create=False) as graph:
        graph.add_video("clip.mp4")
    capsys.readouterr()
    assert main(["forget", db, "Alice"]) == 2
    assert "holds 2 videos or text sources (chat, clip.mp4): name one with --video NAME" in capsys.readouterr().err
    assert main(["forget", db, "Alice", "--video", "chat"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["removed_records"] == 3 and len(report["removed_lines"]) == 3
    assert main(remember) == 0
    assert json.loads(capsys.readouterr().out)["forgotten"] == 3
    assert main(["characters", db, "--video", "chat"]) == 0
    assert [card["name"] for card in json.loads(capsys.readouterr().out)] == ["Bob"]
    assert find_on_disk(files_beside(tmp_path / "text.db"), HER) == {}
