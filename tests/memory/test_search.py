"""Every M3-Agent search rule on the hand-built kitchen episode (tests/conftest.py)."""

import pytest

from m3agent.memory import MemoryStoreError, SeenClips
from tests.conftest import rand_vec


def clip_ids(result):
    return [c.id for c in result.clips]


def test_clip_level_top_k_best_line_first(kitchen):
    result = kitchen.search("cooks pasta in the kitchen", top_k=2, threshold=0.1)
    assert result.mode == "clips"
    assert clip_ids(result)[0] == 3
    assert len(result.clips) == 2
    assert result.clips[0].rank_score >= result.clips[1].rank_score
    assert kitchen.search("pasta", top_k=1, threshold=0.1).clips[0].id == 3


def test_threshold_drops_weak_clips(kitchen):
    assert kitchen.search("quantum chromodynamics lecture", threshold=0.5).empty
    assert not kitchen.search("cooks pasta in the kitchen", threshold=0.5).empty


def test_whole_clip_returned_translated_without_equivalences(kitchen):
    a = kitchen.ids["alice_face"]
    result = kitchen.search("opens the fridge", top_k=1, threshold=0.1)
    clip = result.clips[0]
    assert clip.id == 0 and (clip.start, clip.end) == (0.0, 30.0)
    assert f"<character_{a}> opens the fridge in the kitchen" in clip.lines
    assert f"<character_{a}> says hi I am Alice" in clip.lines  # the voice maps to the same character
    assert not any(line.lower().startswith("equivalence") for line in clip.lines)
    assert not any("<face_" in line or "<voice_" in line for line in clip.lines)


def test_clips_already_returned_are_not_returned_again(kitchen):
    seen = SeenClips()
    first = kitchen.search("kitchen", top_k=1, threshold=0.05, seen=seen)
    second = kitchen.search("kitchen", top_k=1, threshold=0.05, seen=seen)
    assert first.clips and second.clips
    assert first.clips[0].id != second.clips[0].id
    assert {first.clips[0].id, second.clips[0].id} == {0, 3}
    third = kitchen.search("kitchen", top_k=2, threshold=0.05, seen=seen)
    assert all(c.id not in (0, 3) for c in third.clips)


def test_before_clip_cuts_off_later_clips(kitchen):
    assert 3 in clip_ids(kitchen.search("cooks pasta in the kitchen", top_k=4, threshold=0.05))
    cut = kitchen.search("cooks pasta in the kitchen", top_k=4, threshold=0.05, before_clip=2)
    assert cut.clips and all(c.id <= 2 for c in cut.clips)


def test_character_expansion_and_entity_restriction(kitchen):
    a, bob = kitchen.ids["alice_face"], kitchen.ids["bob_face"]
    result = kitchen.search(f"what does <character_{a}> do on the balcony", top_k=1, threshold=0.05)
    assert result.variants == 2  # one variant per member tag: <face_a>, <voice_av>
    assert clip_ids(result) == [2]
    # "kitchen" alone ranks clip 0 and 3; naming Bob restricts to lines linked to Bob
    restricted = kitchen.search(f"<character_{bob}> in the kitchen", top_k=3, threshold=0.05)
    assert 0 not in clip_ids(restricted)
    assert clip_ids(restricted)[0] == 3


def test_character_id_query_returns_individual_lines(kitchen):
    a = kitchen.ids["alice_face"]
    result = kitchen.search("What is the character id of Alice", top_k=3)
    assert result.mode == "lines"
    lines = [line for c in result.clips for line in c.lines]
    assert len(lines) == 3
    assert f"<character_{a}>'s name is Alice" in lines
    assert [c.id for c in result.clips] == sorted(c.id for c in result.clips)


def test_superseded_fact_hidden_now_but_visible_as_of_earlier_clip(kitchen):
    now = [line for c in kitchen.search("fridge milk full empty", top_k=4, threshold=0.05).clips for line in c.lines]
    assert "The fridge is empty now" in now
    assert "The fridge is full of milk" not in now
    then = [line for c in kitchen.search("fridge milk full", top_k=4, threshold=0.05, before_clip=1).clips
            for line in c.lines]
    assert "The fridge is full of milk" in then
    assert "The fridge is empty now" not in then


def test_search_scoped_to_one_video_or_all(kitchen):
    other = kitchen.add_video("garage")
    with kitchen.clip(other, 0, 0, 30) as b:
        b.episodic("someone repairs a bicycle in the garage")
    with pytest.raises(MemoryStoreError, match="name one"):
        kitchen.search("bicycle")
    assert kitchen.search("repairs a bicycle", video="kitchen", threshold=0.3).empty
    assert clip_ids(kitchen.search("repairs a bicycle", video="garage", threshold=0.3)) == [0]
    both = kitchen.search("kitchen bicycle garage pasta", all_videos=True, top_k=3, threshold=0.05)
    assert {c.video for c in both.clips} == {"kitchen", "garage"}
    assert "video" in both.to_dict()["clips"][0]


def test_empty_and_unknown_queries(kitchen):
    assert kitchen.search("   ").empty
    assert kitchen.search("<character_999> anything", threshold=0.99).empty
    # a query in another script still runs and returns a well-formed result
    assert kitchen.search("台所で何をしていますか", threshold=0.0).mode == "clips"


def test_ann_path_gives_same_top_clips_as_exact(tmp_path, embedder):
    from m3agent.config import IndexConfig, MemoryConfig
    from m3agent.memory import MemoryGraph

    words = ["guitar", "pasta", "balcony", "fridge", "bicycle", "concert", "plants", "garage", "sofa", "milk"]
    cfg = MemoryConfig(index=IndexConfig(backend="auto", ann_threshold=100, target_recall=0.99))
    graph = MemoryGraph.open(tmp_path / "ann.db", cfg, embedder=embedder)
    video = graph.add_video("long")
    for clip in range(60):
        with graph.clip(video, clip, clip * 30, clip * 30 + 30) as b:
            for i in range(5):
                b.episodic(f"line {clip}-{i} about {words[(clip + i) % 10]} and {words[(clip * 3 + i) % 10]}",
                           vector=rand_vec(clip * 10 + i, 512))
    query_vec = rand_vec(7 * 10 + 2, 512)
    exact = graph.vectors._exact_lines(query_vec[None], [video], None, 10, None)
    ann = graph.vectors.top_lines(query_vec[None], [video], None, 10)
    assert graph.vectors.ann is not None  # 300 lines > threshold 100: the IVF index was built
    assert set(ann.ids[:5].tolist()) <= set(exact.ids.tolist())
    assert ann.ids[0] == exact.ids[0] == graph.store.text_nodes(video, clips=[7])[2].id
    graph.close()
    assert (tmp_path / "ann.db.ivf").exists()  # persisted, reused on the next open


def test_ann_sidecar_reused_rebuilt_when_stale_and_dropped_by_forget(tmp_path, embedder):
    from m3agent.config import IndexConfig, MemoryConfig
    from m3agent.memory import MemoryGraph

    cfg = MemoryConfig(index=IndexConfig(ann_threshold=50))
    path = tmp_path / "side.db"
    graph = MemoryGraph.open(path, cfg, embedder=embedder)
    video = graph.add_video("v")
    with graph.clip(video, 0, 0, 30) as b:
        face = b.face([rand_vec(0, 128)])
        for i in range(60):
            b.episodic(f"<face_{face}> secret line {i}" if i < 3 else f"ordinary line {i} about gardening")
    graph.search("gardening", threshold=0.1)
    graph.close()
    sidecar = tmp_path / "side.db.ivf"
    stamp = sidecar.stat().st_mtime_ns
    graph = MemoryGraph.open(path, cfg, embedder=embedder)
    with graph.clip(video, 1, 30, 60) as b:
        b.episodic("a new line about gardening tools")
    assert graph.vectors.ann is not None and len(graph.vectors.ann) == 61  # loaded, then extended
    assert graph.search("gardening tools", threshold=0.1).clips[0].id == 1
    graph.close()
    assert sidecar.stat().st_mtime_ns != stamp
    graph = MemoryGraph.open(path, cfg, embedder=embedder)
    graph.forget(video, f"character_{face}")
    assert not sidecar.exists()  # its codes held the forgotten lines
    assert graph.search("gardening tools", threshold=0.1).clips[0].id == 1
    graph.close()
    graph = MemoryGraph.open(path, cfg, embedder=embedder)
    assert all("secret" not in line for c in graph.search("secret line", top_k=2, threshold=0.0).clips
               for line in c.lines)
    graph.close()


def test_embedder_mismatch_is_refused(kitchen, db_path):
    from m3agent.memory import EmbedderMismatchError, MemoryGraph
    from m3agent.models.embed.hashing import HashingEmbedder

    kitchen.close()
    with pytest.raises(EmbedderMismatchError, match="hashing-512"):
        MemoryGraph.open(db_path, embedder=HashingEmbedder(dim=64))


def test_candidates_from_another_index_keep_their_order_and_lose_only_what_the_search_may_not_return(kitchen):
    from m3agent.memory.model import DECLARATIVE_KINDS

    graph, video = kitchen, kitchen.video
    ids = graph.ids
    other = graph.add_video("garage")
    with graph.clip(other, 0, 0, 30) as b:
        elsewhere = b.episodic("a line of another video")
    vectors = graph.vectors
    everything = [ids["fridge_empty"], elsewhere, ids["alice_name"], ids["fridge_full"]]
    assert vectors._flat is None  # no IVF search built the filter table: a few candidates are looked up one by one
    one_by_one = vectors.eligible(everything, [video], None, DECLARATIVE_KINDS)
    assert one_by_one.ids.tolist() == [ids["fridge_empty"], ids["alice_name"]]
    vectors._facts(vectors.where.ids())  # the filter table is built; lines added after it are looked up one by one
    with graph.clip(video, 4, 120, 150) as b:
        later = b.episodic("a line written after the filter table")
    candidates = [later, *everything]
    hits = vectors.eligible(candidates, [video], None, DECLARATIVE_KINDS)
    assert hits.ids.tolist() == [later, ids["fridge_empty"], ids["alice_name"]]  # other video, superseded: out
    assert hits.clips.tolist() == [4, 2, 0] and set(hits.video_ids.tolist()) == {video}
    as_of_1 = vectors.eligible(candidates, None, 1, DECLARATIVE_KINDS)  # as memory stood at clip 1, every video
    assert as_of_1.ids.tolist() == [elsewhere, ids["alice_name"], ids["fridge_full"]]
