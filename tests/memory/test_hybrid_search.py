"""Hybrid search: BM25 from the lexical index fused with the vectors by reciprocal rank."""

import zlib

import numpy as np
import pytest

from m3agent.config import MemoryConfig, SearchConfig
from m3agent.memory import MemoryGraph
from m3agent.memory.search import rrf
from m3agent.models.embed.base import TextEmbedder


class BlindEmbedder(TextEmbedder):
    """Random unit vectors per text: no word overlap reaches the vectors, so only BM25 can find a word."""

    name = "blind-64"
    dim = 64
    relevance_threshold = 0.5

    def embed(self, texts):
        out = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(self.dim) for t in texts]
        out = np.asarray(out, np.float32).reshape(len(texts), self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def zoo(path, retrieval="fused"):
    graph = MemoryGraph.open(path, MemoryConfig(search=SearchConfig(retrieval=retrieval)), embedder=BlindEmbedder())
    video = graph.add_video("zoo")
    with graph.clip(video, 0, 0, 30) as b:
        face = b.face([np.ones(8, np.float32)])
        b.episodic(f"<face_{face}> feeds the zebra at noon")
        b.episodic("a keeper sweeps the path")
    with graph.clip(video, 1, 30, 60) as b:
        b.episodic("the giraffe eats leaves")
        b.episodic("visitors buy tickets")
    with graph.clip(video, 2, 60, 90) as b:
        b.episodic("the zebra sleeps in the shade")
    graph.face = face
    return graph


def test_rrf_adds_reciprocal_ranks():
    fused = rrf([[1, 2, 3], [3, 1]], k=60)
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2] == pytest.approx(1 / 62)


def test_words_the_vectors_miss_are_found_by_bm25(db_path):
    with zoo(db_path) as graph:
        result = graph.search("where is the zebra", top_k=3)
        assert sorted(c.id for c in result.clips) == [0, 2]
        assert all(c.lexical > 0 and c.rank_score > 0 for c in result.clips)
        assert all(c.score < 0.5 for c in result.clips)  # the cosine of the best line, as before
    with zoo(db_path.with_name("dense.db"), retrieval="dense") as graph:
        assert graph.search("where is the zebra", top_k=3).empty
    with zoo(db_path.with_name("lexical.db"), retrieval="lexical") as graph:
        lines = graph.search("where is the zebra", lines=5).lines
        assert len(lines) == 2 and all(line["lexical"] > 0 for line in lines)


def test_lexical_hits_obey_as_of_scope_and_entity_rules(db_path):
    with zoo(db_path) as graph:
        assert [c.id for c in graph.search("zebra", top_k=3, before_clip=1).clips] == [0]
        other = graph.add_video("farm")
        with graph.clip(other, 0, 0, 30) as b:
            b.episodic("a zebra escaped to the farm")
        assert {c.video for c in graph.search("zebra", video="zoo", top_k=5).clips} == {"zoo"}
        assert {c.video for c in graph.search("zebra", all_videos=True, top_k=5).clips} == {"zoo", "farm"}
        named = graph.search(f"what does <character_{graph.face}> do with the zebra", video="zoo", top_k=5)
        assert [c.id for c in named.clips] == [0]  # only the lines linked to that face


def test_lines_mode_gives_each_line_its_scores(db_path):
    with zoo(db_path) as graph:
        lines = graph.search("zebra giraffe", lines=4).lines
        assert len(lines) == 4
        assert {line["text"] for line in lines if line["lexical"] > 0} == {
            f"<character_{graph.face}> feeds the zebra at noon", "the giraffe eats leaves", "the zebra sleeps in the shade"}
        assert all(-1 <= line["score"] <= 1 for line in lines)  # the cosine, as for clips
        assert [line["rank_score"] for line in lines] == sorted((line["rank_score"] for line in lines), reverse=True)


def test_seen_clips_are_skipped_for_lexical_hits_too(db_path):
    from m3agent.memory import SeenClips

    with zoo(db_path) as graph:
        seen = SeenClips()
        first = graph.search("zebra", top_k=1, seen=seen).clips
        second = graph.search("zebra", top_k=1, seen=seen).clips
        assert {first[0].id, second[0].id} == {0, 2}
        assert graph.search("zebra", top_k=1, seen=seen).empty
