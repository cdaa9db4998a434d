"""The IVF index over product-quantised codes: its short list holds the true neighbours, files of the older
codec (4 dimensions a sub-quantizer) are still read and used as they are."""

import numpy as np

import m3agent.memory.index.ivf as ivf
from m3agent.memory.index.ivf import IVFIndex, current, pq_subquantizers, read_header


def clustered(rng, n, dim=32, centres=40):
    """Unit vectors around a few dozen centres, as sentence embeddings of a few topics are."""
    middle = rng.standard_normal((centres, dim)).astype(np.float32)
    v = middle[rng.integers(0, centres, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def recall_at_10(index: IVFIndex, vectors: np.ndarray, queries: np.ndarray) -> float:
    index.refine = lambda ids: vectors[ids]
    _, found = index.search(queries, 10)
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found.tolist(), truth.tolist())]))


def test_sub_quantizers_cover_two_dimensions_each():
    assert pq_subquantizers(384) == 192 and pq_subquantizers(384, 4) == 96 and pq_subquantizers(7) == 7


def test_pq_index_finds_the_neighbours_and_calibrates_to_the_target(tmp_path):
    rng = np.random.default_rng(0)
    vectors = clustered(rng, 6000)
    index = IVFIndex(32)
    index.build(np.arange(6000), vectors, target_recall=0.95)
    assert index.meta["codec"] == ivf.CODEC == "pq4fs2" and index.refine_factor == ivf.REFINE_FACTOR["pq4fs2"]
    assert index.shortlist(10) == 64 * ivf.REFINE_FACTOR["pq4fs2"]
    assert recall_at_10(index, vectors, clustered(rng, 100)) >= 0.9
    index.save(str(tmp_path / "x.ivf"))
    loaded = IVFIndex.load(str(tmp_path / "x.ivf"))
    assert loaded.nprobe == index.nprobe and loaded.refine_factor == index.refine_factor


def test_files_of_the_older_codec_are_current_and_keep_their_short_list(tmp_path, monkeypatch):
    monkeypatch.setattr(ivf, "CODEC", "pq4fs")  # what files written before 2026-11-25 hold
    rng = np.random.default_rng(1)
    vectors = clustered(rng, 5000)
    old = IVFIndex(32)
    old.build(np.arange(5000), vectors, nprobe=16)
    old.save(str(tmp_path / "old.ivf"))
    monkeypatch.undo()
    assert current(read_header(str(tmp_path / "old.ivf")))  # not rebuilt: it still answers right
    loaded = IVFIndex.load(str(tmp_path / "old.ivf"))
    assert loaded.meta["codec"] == "pq4fs" and loaded.refine_factor == ivf.REFINE_FACTOR["pq4fs"]
    assert loaded._index.pq.M == pq_subquantizers(32, 4)
    assert recall_at_10(loaded, vectors, clustered(rng, 100)) >= 0.9
