"""Memory DBs and everything beside them are private to their owner."""

import stat

from m3agent.config import IndexConfig, MemoryConfig
from m3agent.files.private import open_private, private_dir
from m3agent.memory import MemoryGraph
from tests.conftest import rand_vec


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_new_db_its_wal_index_and_lock_are_0600_in_0700_folders(tmp_path, embedder):
    db = tmp_path / "new" / "deeper" / "memory.db"
    graph = MemoryGraph.open(db, MemoryConfig(index=IndexConfig(ann_threshold=1)), embedder=embedder)
    video = graph.add_video("v")
    with graph.clip(video, 0, 0, 30) as b:
        face = b.face([rand_vec(1, 128)], crops=[(b"\xff\xd8CROP", 0.9)])
        for i in range(20):
            b.episodic(f"<face_{face}> does thing number {i}")
    graph.search("does a thing", threshold=0.0)
    beside = [p for p in db.parent.iterdir() if p.name.startswith("memory.db")]
    assert {p.name for p in beside} >= {"memory.db", "memory.db-wal", "memory.db.lock"}
    graph.close()
    beside = [p for p in db.parent.iterdir()]
    assert {"memory.db.ivf", "memory.db.vec"} <= {p.name for p in beside}  # both caches are private too
    for path in beside:
        assert mode(path) == 0o600, path
    assert mode(tmp_path / "new") == 0o700 and mode(tmp_path / "new" / "deeper") == 0o700


def test_existing_files_and_folders_keep_their_mode(tmp_path):
    folder = tmp_path / "team"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    private_dir(folder)
    assert mode(folder) == 0o755
    path = folder / "answers.jsonl"
    with open_private(path) as fh:
        fh.write("{}\n")
    assert mode(path) == 0o600
    path.chmod(0o644)
    with open_private(path, "a") as fh:
        fh.write("{}\n")
    assert mode(path) == 0o644
