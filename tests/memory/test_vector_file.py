"""The vector file beside the DB (``memory.db.vec``): mapped on open instead of reading every row, kept in
step with what is committed, and never trusted when it does not match the DB."""

import numpy as np
import pytest

from m3agent.config import MemoryConfig
from m3agent.memory import MemoryGraph, vecfile
from tests.conftest import rand_vec

QUERIES = [("fridge", {}), ("The fridge is full of milk", {}), ("fridge", {"before_clip": 2}),
           ("guitar concert", {}), ("pasta kitchen", {"video": None, "all_videos": True}), ("balcony plants", {"before_clip": 3})]


def build(path, embedder):
    """Two videos; a fact superseded in clip 2; searched once (vectors loaded) and closed (file written)."""
    graph = MemoryGraph.open(path, MemoryConfig(), embedder=embedder)
    for name in ("kitchen", "garden"):
        video = graph.add_video(name)
        with graph.clip(video, 0, 0, 30) as b:
            face = b.face([rand_vec(1, 128)])
            b.episodic(f"<face_{face}> opens the fridge in the {name}")
            full = b.semantic("The fridge is full of milk")
        with graph.clip(video, 1, 30, 60) as b:
            b.episodic(f"<face_{face}> plays guitar at the concert in the {name}")
        with graph.clip(video, 2, 60, 90) as b:
            b.semantic("The fridge is empty now", supersedes=[full])
            b.episodic(f"<face_{face}> waters the balcony plants in the {name}")
    graph.search("fridge", all_videos=True, threshold=0.0)
    graph.close()
    return path.parent / (path.name + ".vec")


def mapped_file(array) -> bool:
    """Whether ``array`` is a view of a memory-mapped file (not a copy in memory)."""
    import mmap

    while array is not None:
        if isinstance(array, np.memmap | mmap.mmap):
            return True
        array = getattr(array, "base", None)
    return False


def answers(path, embedder):
    graph = MemoryGraph.open(path, MemoryConfig(), embedder=embedder)
    try:
        return [[(c.id, c.lines) for c in graph.search(q, threshold=0.0, top_k=3, **({"video": "kitchen"} | kw)).clips]
                for q, kw in QUERIES]
    finally:
        graph.close()


def test_reopening_maps_the_file_and_answers_as_from_the_rows(tmp_path, embedder, monkeypatch):
    path = tmp_path / "m.db"
    vec = build(path, embedder)
    assert vec.exists()
    read_per_video = []
    real = MemoryGraph.open(path, embedder=embedder)
    store_type = type(real.store)
    real.close()
    original = store_type.text_vector_rows

    def spy(self, video_id=None, after_id=-1):
        read_per_video.append(video_id)
        return original(self, video_id, after_id)

    monkeypatch.setattr(store_type, "text_vector_rows", spy)
    graph = MemoryGraph.open(path, embedder=embedder)
    vectors = graph.vectors
    assert read_per_video == [None]  # only the lines committed after the file, none here
    assert all(mapped_file(vv.index.vectors) for vv in vectors.videos.values())
    graph.close()
    mapped = answers(path, embedder)
    vec.unlink()
    assert answers(path, embedder) == mapped  # the same as read from SQLite rows (which writes the file again)
    assert vec.exists()


def test_lines_committed_after_the_file_are_read_from_the_db(tmp_path, embedder):
    path = tmp_path / "m.db"
    vec = build(path, embedder)
    older = vec.read_bytes()
    graph = MemoryGraph.open(path, embedder=embedder)  # a writer that never searches, as memorizing is
    video = graph.resolve_video("kitchen").id
    with graph.clip(video, 3, 90, 120) as b:
        b.episodic("a new line about the broken dishwasher")
    graph.close()
    assert vec.read_bytes() != older  # the writer brought the file in step, though it never loaded the vectors
    vec.write_bytes(older)  # a file one line behind, as after a few clips in a large memory (under 1%: kept)
    graph = MemoryGraph.open(path, embedder=embedder, readonly=True)
    assert graph.search("broken dishwasher", video="kitchen", threshold=0.0, top_k=1).clips[0].id == 3
    assert len(graph.vectors) == graph.vectors.filed + 1  # the new line came from SQLite
    graph.close()
    assert vec.read_bytes() == older  # a reader never writes it


def test_a_writer_that_never_searched_leaves_the_file(tmp_path, embedder):
    path = tmp_path / "m.db"
    graph = MemoryGraph.open(path, MemoryConfig(), embedder=embedder)
    video = graph.add_video("v")
    with graph.clip(video, 0, 0, 30) as b:
        b.episodic("a line about gardening")
    graph.close()
    assert (tmp_path / "m.db.vec").exists()
    graph = MemoryGraph.open(path, embedder=embedder, readonly=True)
    assert graph.vectors.filed == 1
    graph.close()


@pytest.mark.parametrize("damage", ["truncated", "other_db", "missing_line", "garbage"])
def test_a_file_that_does_not_match_the_db_is_not_trusted(tmp_path, embedder, damage):
    path = tmp_path / "m.db"
    vec = build(path, embedder)
    expected = answers(path, embedder)
    if damage == "truncated":
        vec.write_bytes(vec.read_bytes()[:-100])
    elif damage == "other_db":
        other = build(tmp_path / "other.db", embedder)  # same content, another DB's identity
        vec.write_bytes(other.read_bytes())
    elif damage == "missing_line":  # right identity, but the DB holds a line the file lacks
        graph = MemoryGraph.open(path, embedder=embedder)
        tv = graph.vectors
        first = next(iter(tv.videos.values()))
        rows = np.zeros(len(first) - 1, vecfile.ROW)
        rows["id"], rows["video"] = first.index.ids[1:], next(iter(tv.videos))
        rows["clip"], rows["kind"], rows["valid_from"] = first.clip[1:], first.kind[1:], first.valid_from[1:]
        vecfile.write(str(vec), tv.identity, tv.dim, [(rows, np.zeros((len(rows), tv.dim), np.float32))])
        graph.store.close()
    else:
        vec.write_bytes(b"not a vector file at all")
    graph = MemoryGraph.open(path, embedder=embedder)
    assert graph.vectors.filed == 0  # read from the rows instead
    graph.close()  # and the file written again
    assert answers(path, embedder) == expected


def test_forgetting_removes_the_file(tmp_path, embedder):
    path = tmp_path / "m.db"
    graph = MemoryGraph.open(path, MemoryConfig(), embedder=embedder)
    video = graph.add_video("v")
    with graph.clip(video, 0, 0, 30) as b:
        face = b.face([rand_vec(0, 128)])
        b.episodic(f"<face_{face}> whispers a secret line")
        b.episodic("an ordinary line about gardening")
    graph.search("gardening", threshold=0.0)
    graph.close()
    vec = tmp_path / "m.db.vec"
    assert vec.exists()
    graph = MemoryGraph.open(path, embedder=embedder)
    graph.forget(video, f"character_{face}")
    assert not vec.exists()  # it held the forgotten line's vector
    assert [c.lines for c in graph.search("gardening", threshold=0.0).clips] == [["an ordinary line about gardening"]]
    graph.close()


def test_the_line_counter_follows_inserts_and_forgetting_and_old_dbs_get_one(tmp_path, embedder):
    path = tmp_path / "m.db"
    build(path, embedder)
    graph = MemoryGraph.open(path, embedder=embedder)
    store = graph.store
    lines = store.text_vector_count()
    assert store.text_line_total() == lines > 0
    video = graph.resolve_video("kitchen").id
    face = next(iter(graph.characters(video).members))
    graph.forget(video, f"character_{face}")
    assert store.text_line_total() == store.text_vector_count() < lines
    store.delete_meta("text_lines")  # a DB from before the counter
    graph.close()
    graph = MemoryGraph.open(path, embedder=embedder, readonly=True)
    assert graph.store.text_line_total() == graph.store.text_vector_count()  # counted
    graph.close()
    graph = MemoryGraph.open(path, embedder=embedder)  # the first writable open adds it
    assert "text_lines" in graph.store.meta()
    graph.store.set_meta("text_lines", "1:5")  # kept by a writer that did not know it: the highest id tells
    assert graph.store.text_line_total() == graph.store.text_vector_count()
    graph.close()


def test_the_ivf_index_is_mapped_on_open_and_still_takes_new_lines(tmp_path, embedder):
    from m3agent.config import IndexConfig

    path = tmp_path / "m.db"
    config = MemoryConfig(index=IndexConfig(backend="ivf", nprobe=4))
    build(path, embedder)
    graph = MemoryGraph.open(path, config, embedder=embedder)
    graph.vectors.build_ann()
    graph.close()
    graph = MemoryGraph.open(path, config, embedder=embedder)
    assert graph.vectors.ann.mapped
    video = graph.resolve_video("kitchen").id
    with graph.clip(video, 3, 90, 120) as b:
        b.episodic("a new line about the broken dishwasher")
    assert not graph.vectors.ann.mapped  # read into memory to take the line
    assert graph.search("broken dishwasher", video="kitchen", threshold=0.0, top_k=1).clips[0].id == 3
    graph.close()
    graph = MemoryGraph.open(path, config, embedder=embedder, readonly=True)
    assert graph.search("broken dishwasher", video="kitchen", threshold=0.0, top_k=1).clips[0].id == 3
    assert graph.vectors.ann.mapped and len(graph.vectors.ann) == len(graph.vectors)
    graph.close()
