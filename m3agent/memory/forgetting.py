"""What forgetting a person removes, and the proof that it is gone from every file beside the DB.

A person is their face and voice nodes with crops, embeddings and transcripts (or a text source's
speaker node), the lines only about them (a speaker's: the records they spoke), their tags in lines
they share, and (unless mentions are kept) every line and transcript in which others speak of them by
name. The ids of the text records removed are kept, as digests only, so that giving the same records
again does not bring them back. Deleting rows is not enough: SQLite keeps old pages in the WAL
and in free pages, and caches keep copies. So the deletion is followed by a scrub (secure delete,
checkpoint, vacuum, the ANN cache dropped) and a byte-level search of every file beside the DB for
what was removed; success is reported only when none of it is found.
"""

from __future__ import annotations

import hashlib
import mmap
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from m3agent.memory.errors import DatabaseBusyError, DiskFullError, MemoryStoreError
from m3agent.memory.model import TEXT_KINDS, NodeKind
from m3agent.memory.store import SQLiteStore
from m3agent.memory.tags import rewrite_tags

SCRUB_PENDING = "scrub_pending"  # meta key: rows are deleted, old pages may still be on disk
MAX_NEEDLES = 96
FORGOTTEN_RECORDS = "forgotten_records"  # a source's metadata key: digests of the ids of records forgotten


class ForgetIncompleteError(MemoryStoreError):
    """The rows are deleted and scrubbed, but another file beside the DB (a copy, a backup) still holds some."""


@dataclass
class ForgetPlan:
    """Everything one forget removes or rewrites, worked out before anything is changed."""

    members: set[int]
    names: list[str]
    only_them: list[int] = field(default_factory=list)  # lines that mention no one else
    mentions: list[int] = field(default_factory=list)  # lines where others name them
    rewritten: list[tuple[int, str]] = field(default_factory=list)  # shared lines, their tags replaced
    segments: dict[int, str] = field(default_factory=dict)  # others' transcript segments naming them, by rowid
    needles: list[bytes] = field(default_factory=list)  # what must not be found on disk afterwards
    records: list[str] = field(default_factory=list)  # digests of the text records whose lines are removed

    @property
    def removed_lines(self) -> list[int]:
        return sorted(set(self.only_them) | set(self.mentions))


def name_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    """Whole-word, case-insensitive match of a name or any capitalised word of it ("Alice Smith" also
    matches "Alice"), so that a first name said aloud is found."""
    words = set()
    for name in names:
        name = name.strip()
        if len(name) >= 2:
            words.add(name)
        words.update(w for w in re.findall(r"\w+", name) if len(w) >= 3 and w[0].isupper())
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def plan_forget(store: SQLiteStore, video_id: int, members: set[int], names: Sequence[str],
                keep_mentions: bool) -> ForgetPlan:
    plan = ForgetPlan(set(members), list(names))
    linked = store.texts_linked_to(members)
    edges = store.edges_of_text(linked)
    plan.only_them = [t for t in linked if set(edges.get(t, {})) <= members]
    pattern = None if keep_mentions else name_pattern(names)
    if pattern is not None:
        gone = set(plan.only_them)
        for word in {m.lower() for n in names for m in re.findall(r"\w+", n) if len(m) >= 2}:
            plan.mentions += [i for i, text in store.texts_containing(video_id, word)
                              if i not in gone and pattern.search(text)]
            plan.segments.update((i, text) for i, node, text in store.segments_containing(video_id, word)
                                 if node not in members and pattern.search(text))
        plan.mentions = sorted(set(plan.mentions))
    removed = set(plan.removed_lines)
    member_tags = {f"{kind}_{n}" for n in members for kind in ("face", "voice")}
    plan.rewritten = [(node.id, rewrite_tags(node.text, {t: "someone" for t in member_tags}))
                      for node in store.text_nodes(ids=[t for t in linked if t not in removed])]
    plan.needles = _needles(store, plan, keep_mentions)
    plan.records = _record_digests(store, plan.removed_lines)
    return plan


def _needles(store: SQLiteStore, plan: ForgetPlan, keep_mentions: bool) -> list[bytes]:
    """Distinctive pieces of what is removed: texts whole, binary blobs by a slice of their middle."""
    texts = [n.text for n in store.text_nodes(ids=plan.removed_lines, kinds=TEXT_KINDS) if n.text]
    texts += store.segment_texts(plan.members) + list(plan.segments.values())
    if not keep_mentions:
        texts += plan.names
    words = [t.encode() for t in dict.fromkeys(t.strip() for t in texts) if len(t.strip()) >= 3]
    slices = []
    for blob in store.entity_blobs(plan.members) + store.text_vector_blobs(plan.removed_lines):
        middle = blob[len(blob) // 2 - 16: len(blob) // 2 + 16] if len(blob) >= 48 else blob
        if len(set(middle)) >= 8:  # zeros or a flat run would match scrubbed pages
            slices.append(middle)
    return words[:MAX_NEEDLES] + slices[:MAX_NEEDLES]


def record_digest(record: str, procedural: bool) -> str:
    """What is kept of a forgotten record's id: a digest (the id itself may name someone). Procedural
    records and the others are two namespaces, as in the records table."""
    kind = "procedural" if procedural else "declarative"
    return hashlib.blake2b(f"{kind}\x1f{record}".encode(), digest_size=16).hexdigest()


def _record_digests(store: SQLiteStore, lines: Sequence[int]) -> list[str]:
    meta = store.node_meta(lines)
    return sorted({record_digest(str(meta[n.id]["record"]), n.kind is NodeKind.PROCEDURAL)
                   for n in store.text_nodes(ids=[i for i in lines if "record" in meta.get(i, {})], kinds=TEXT_KINDS)})


def note_forgotten(store: SQLiteStore, video_id: int, digests: Sequence[str]) -> None:
    """Keep the digests of forgotten records with their source (inside the forget's transaction)."""
    if digests:
        known = store.video_meta(video_id).get(FORGOTTEN_RECORDS, [])
        store.update_video_meta(video_id, **{FORGOTTEN_RECORDS: sorted(set(known) | set(digests))})


def forgotten_records(store: SQLiteStore, video_id: int, records: Iterable[str], procedural: bool) -> set[str]:
    """Which of these record ids were forgotten from this source: ``remember`` must not store them again."""
    known = set(store.video_meta(video_id).get(FORGOTTEN_RECORDS, []))
    return {r for r in records if record_digest(r, procedural) in known} if known else set()


def files_beside(db: Path) -> list[Path]:
    """The DB and every file named after it in its folder (WAL, index, caches, logs)."""
    folder = db.parent if str(db.parent) else Path(".")
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and (p == db or p.name.startswith((db.name + "-", db.name + "."))))


def find_on_disk(files: Iterable[Path], needles: Sequence[bytes]) -> dict[bytes, list[Path]]:
    """Which needles occur in which files, by their raw bytes."""
    found: dict[bytes, list[Path]] = {}
    for path in files:
        try:
            with open(path, "rb") as fh:
                if path.stat().st_size == 0:
                    continue
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    for needle in needles:
                        if data.find(needle) >= 0:
                            found.setdefault(needle, []).append(path)
        except (OSError, ValueError):
            continue
    return found


def wait_for_checkpoint(store: SQLiteStore, wait: float, what: str) -> None:
    """Empty the WAL into the main file, retrying while readers hold old snapshots, up to ``wait`` s."""
    deadline = time.monotonic() + max(0.0, wait)
    while not store.checkpoint(timeout=min(1.0, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            raise DatabaseBusyError(
                f"{store.path} is being read by another process, which keeps old pages in {store.path}-wal; "
                f"{what}: close the other reader (or pass a longer --wait) and run the command again")
        time.sleep(0.2)


def scrub(store: SQLiteStore, wait: float) -> None:
    """Make deleted rows unrecoverable from the files: checkpoint, vacuum, checkpoint. A vacuum that
    fails for lack of space is not fatal: secure delete has already zeroed the freed pages."""
    what = "forgotten data may still be on disk until it closes"
    wait_for_checkpoint(store, wait, what)
    try:
        store.vacuum()
    except DiskFullError:
        pass
    wait_for_checkpoint(store, wait, what)


def verify_gone(store: SQLiteStore, needles: Sequence[bytes]) -> list[str]:
    """Files that still hold removed content (content the DB legitimately holds elsewhere excepted)."""
    found = find_on_disk(files_beside(store.path), needles)
    leftovers = []
    for needle, paths in found.items():
        if not store.holds_bytes(needle):
            leftovers += [p.name for p in paths]
    return sorted(set(leftovers))
