"""8-bit re-rank codes of the IVF index: they order a short list as the exact vectors do, survive the
index file, and lines added later are scored exactly unless their values fit the built range."""

import numpy as np

from m3agent.memory.index.ivf import IVFIndex, current, read_header
from m3agent.memory.index.rerank import RerankCodes
from m3agent.memory.sorted_ids import SortedIds


def unit(rng, n, dim=64):
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_codes_order_a_short_list_like_the_exact_vectors():
    rng = np.random.default_rng(0)
    vectors = unit(rng, 5000)
    ids = rng.permutation(np.arange(10, 5010)).astype(np.int64)  # not in order, as videos come
    codes = RerankCodes.encode(ids, vectors)
    exact_of = dict(zip(ids.tolist(), vectors))
    agree = []
    for query in unit(rng, 50):
        short = rng.choice(ids, 400, replace=False)
        approx, held = codes.approximate(short)
        assert held.all() and np.abs(approx - np.stack([exact_of[i] for i in short.tolist()])).max() < 0.01
        exact = np.stack([exact_of[i] for i in short.tolist()]) @ query
        agree.append(len(set(short[np.argsort(-exact)[:10]]) & set(short[np.argsort(-(approx @ query))[:10]])))
    assert np.mean(agree) >= 9.5  # the top 10 by codes is (nearly always) the top 10 by exact vectors


def test_unknown_and_later_lines(tmp_path):
    rng = np.random.default_rng(1)
    vectors = unit(rng, 200)
    codes = RerankCodes.encode(np.arange(200), vectors)
    _, held = codes.approximate(np.array([5, 999, -1]))
    assert held.tolist() == [True, False, False]
    inside = (vectors[3] + vectors[4]) / 2  # within every dimension's built range
    outside = np.full(64, 0.9, np.float32)  # beyond it: no code, scored exactly by the owner
    codes.add(np.array([300, 301]), np.stack([inside, outside]))
    approx, held = codes.approximate(np.array([301, 300]))
    assert held.tolist() == [False, True] and np.abs(approx[1] - inside).max() < 0.01 and not approx[0].any()
    with open(tmp_path / "codes", "wb") as fh:
        fh.write(b"x" * 13)  # the codes follow other data in a file
        where = codes.write(fh)
    again = RerankCodes.map(str(tmp_path / "codes"), where)
    assert len(again) == 201 and again.approximate(np.array([300]))[1].all()
    np.testing.assert_array_equal(again.approximate(np.arange(200))[0], codes.approximate(np.arange(200))[0])


def test_the_index_file_carries_its_codes_and_older_files_are_not_current(tmp_path):
    rng = np.random.default_rng(2)
    vectors = unit(rng, 3000)
    index = IVFIndex(64)
    index.build(np.arange(3000), vectors, nprobe=8)
    index.save(str(tmp_path / "x.ivf"))
    header = read_header(str(tmp_path / "x.ivf"))
    assert current(header) and not current({k: v for k, v in header.items() if k != "rerank"})
    loaded = IVFIndex.load(str(tmp_path / "x.ivf"))
    assert loaded.mapped and len(loaded.rerank) == 3000
    np.testing.assert_array_equal(loaded.rerank.approximate(np.arange(3000))[0],
                                  index.rerank.approximate(np.arange(3000))[0])


def test_sorted_ids_dense_and_sparse():
    dense = SortedIds(np.array([2, 3, 7, 8], np.int64))
    pos, found = dense.find(np.array([7, 4, 2, 100, -3]))
    assert found.tolist() == [True, False, True, False, False] and pos[[0, 2]].tolist() == [2, 0]
    sparse = SortedIds(np.array([5, 10**9], np.int64))  # too sparse for a table: bisected
    pos, found = sparse.find(np.array([10**9, 6]))
    assert found.tolist() == [True, False] and pos[0] == 1
    assert SortedIds(np.zeros(0, np.int64)).find(np.array([1]))[1].tolist() == [False]


def test_scores_without_decoding_are_the_decoded_products():
    rng = np.random.default_rng(3)
    codes = RerankCodes.encode(np.arange(300), unit(rng, 300))
    queries, ids = unit(rng, 2), np.array([4, 250, 999, 17])
    scores, held = codes.scores(queries, ids)
    decoded, _ = codes.approximate(ids)
    assert held.tolist() == [True, True, False, True] and scores.shape == (2, 4) and not scores[:, 2].any()
    np.testing.assert_allclose(scores[:, held], (queries @ decoded.T)[:, held], atol=1e-5)
