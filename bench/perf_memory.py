"""Memory-core benchmark: insert and search at 10k, 100k and 1M text nodes (384-d MiniLM vectors).

Usage: ``python -m bench.perf_memory [--sizes 10000 100000 1000000] [--write docs/BENCHMARKS.md] [--keep]``;
``--db PATH`` reopens a kept DB in a fresh process (first search since process start, search p50, RSS).
Each size runs in its own process (clean RSS). Vectors are real MiniLM embeddings of 60k real
sentences (bench/corpus.py); beyond that, node vectors are synthesised around real ones:
``normalize(real_i + 0.5 * g / sqrt(384))`` with gaussian ``g`` (cosine to its source ~0.89), so the
1M set keeps the real clustering. Queries are 500 real M3-Bench questions, embedded beforehand:
latencies exclude query embedding. Recall@10 is measured against exact search over the same data.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SELF = (sys.executable, "-m", "bench.perf_memory")  # each size in a fresh process, run as a module like this one
RESULTS = ROOT / "bench" / "results_memory.json"  # latest result per size, rendered together
LINES_PER_CLIP = 50
CLIPS_PER_VIDEO = 120  # one hour of 30-s clips per video


def precomputed_embedder(table: dict[str, np.ndarray]):
    """An embedder returning the cached vector of a known query text, so latencies exclude the model."""
    from m3agent.models.embed.base import TextEmbedder
    from m3agent.models.embed.sentence_transformers import MINILM_RELEVANCE

    class PrecomputedEmbedder(TextEmbedder):
        name = "all-MiniLM-L6-v2"
        dim = 384
        relevance_threshold = MINILM_RELEVANCE

        def embed(self, texts):
            return np.stack([table[t] for t in texts]) if len(texts) else np.zeros((0, self.dim), np.float32)

    return PrecomputedEmbedder()



def node_vectors(base: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    if n <= len(base):
        return base[:n].copy()
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), np.float32)
    out[: len(base)] = base
    for start in range(len(base), n, 100_000):
        stop = min(n, start + 100_000)
        src = base[np.arange(start, stop) % len(base)]
        noisy = src + 0.5 * rng.standard_normal(src.shape).astype(np.float32) / np.sqrt(base.shape[1])
        out[start:stop] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: reset by exec, unlike ru_maxrss after fork)."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values, q):
    return float(np.percentile(np.asarray(values), q))


def run_size(n: int, keep: bool = False) -> dict:
    from tqdm import tqdm

    from bench.corpus import load_corpus
    from m3agent.config import MemoryConfig
    from m3agent.memory import MemoryGraph

    sentences, base, queries, query_vecs = load_corpus()
    vectors = node_vectors(base, n)
    tmp = tempfile.mkdtemp(prefix="m3bench-")
    db = os.path.join(tmp, "bench.db")
    graph = MemoryGraph.open(db, MemoryConfig(), embedder=precomputed_embedder(dict(zip(queries, query_vecs))))
    clip_ms, built = [], 0
    t0 = time.perf_counter()
    n_clips = (n + LINES_PER_CLIP - 1) // LINES_PER_CLIP
    with tqdm(total=n, desc=f"insert {n:,}", unit="node", mininterval=2) as bar:
        for c in range(n_clips):
            video_no, clip = divmod(c, CLIPS_PER_VIDEO)
            if clip == 0:
                video = graph.add_video(f"video{video_no:05d}", duration=CLIPS_PER_VIDEO * 30.0)
                faces = None
            lo, hi = c * LINES_PER_CLIP, min(n, (c + 1) * LINES_PER_CLIP)
            t = time.perf_counter()
            with graph.clip(video, clip, clip * 30.0, clip * 30.0 + 30) as b:
                if faces is None:
                    faces = [b.face([np.zeros(128, np.float32)]) for _ in range(2)]
                for i in range(lo, hi):
                    tag = f"<face_{faces[i % 2]}> " if i % 2 == 0 else ""
                    b.episodic(tag + sentences[i % len(sentences)], vector=vectors[i])
            clip_ms.append((time.perf_counter() - t) * 1000)
            built = hi
            bar.update(hi - lo)
    insert_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    ann_used = graph.vectors._ann_wanted(n)
    if ann_used:
        graph.vectors.build_ann()
    index_s = time.perf_counter() - t1
    tv = graph.vectors

    # exact ground truth over all nodes
    import faiss

    all_ids = tv.where.ids()
    all_vecs = tv.vectors_of(all_ids)
    _, truth_rows = faiss.knn(np.ascontiguousarray(query_vecs), all_vecs, 10, metric=faiss.METRIC_INNER_PRODUCT)
    truth = all_ids[truth_rows]
    del all_vecs

    line_ms, recalls = [], []
    for q, qv in enumerate(query_vecs):
        t = time.perf_counter()
        hits = tv.top_lines(qv[None], None, None, 10)
        line_ms.append((time.perf_counter() - t) * 1000)
        recalls.append(len(set(hits.ids[:10].tolist()) & set(truth[q].tolist())) / 10)
    first_video = graph.videos()[0].name
    searches = {}
    for retrieval in ("dense", "fused"):  # vectors alone (M3-Agent's search), then fused with BM25
        for scope, kwargs in (("all", {"all_videos": True}), ("video", {"video": first_video})):
            graph.search(queries[0], threshold=0.0, retrieval=retrieval, **kwargs)
            ms = []
            for qtext in queries[:200]:
                t = time.perf_counter()
                graph.search(qtext, threshold=0.0, retrieval=retrieval, **kwargs)
                ms.append((time.perf_counter() - t) * 1000)
            searches[(retrieval, scope)] = ms
    clip_search_ms, scoped_ms = searches[("fused", "all")], searches[("fused", "video")]
    graph.close()
    reopened = reopen(db)
    size = os.path.getsize(db)
    ivf = db + ".ivf"
    result = {
        "nodes": built,
        "videos": (n_clips + CLIPS_PER_VIDEO - 1) // CLIPS_PER_VIDEO,
        "index": "ivf-sq8+exact-rerank" if ann_used else "exact (per-video flat)",
        "insert_s": insert_s,
        "index_build_s": index_s,
        "clip_insert_ms_p50": pct(clip_ms, 50),
        "clip_insert_ms_p95": pct(clip_ms, 95),
        "vector_search_ms_p50": pct(line_ms, 50),
        "vector_search_ms_p95": pct(line_ms, 95),
        "recall_at_10": float(np.mean(recalls)),
        "clip_search_all_ms_p50": pct(clip_search_ms, 50),
        "clip_search_all_ms_p95": pct(clip_search_ms, 95),
        "clip_search_video_ms_p50": pct(scoped_ms, 50),
        "dense_clip_search_all_ms_p50": pct(searches[("dense", "all")], 50),
        "dense_clip_search_video_ms_p50": pct(searches[("dense", "video")], 50),
        "db_bytes_per_node": size / built,
        "ivf_bytes_per_node": (os.path.getsize(ivf) / built) if os.path.exists(ivf) else 0.0,
        "rss_mb": peak_rss_mb(),
        **reopened,
    }
    if keep:
        result["db"] = db
        return result
    for p in Path(tmp).iterdir():
        p.unlink()
    os.rmdir(tmp)
    return result


def reopen_and_search(db: str, started: float | None = None, retrieval: str = "fused") -> dict:
    """A fresh process opens the DB and answers questions: load time and steady memory of a user.
    ``started``: when the parent started this process (``time.time()``), so that interpreter start-up and
    imports count too (the vectors come from the memory-mapped ``.vec`` file the build left beside the DB).
    Whole-clip searches over all videos: the first 200 questions after opening (each video's characters are
    read when a search first returns one of its clips), then 200 others (everything read once: a process that
    has been answering for a while)."""
    from bench.corpus import load_corpus
    from m3agent.memory import MemoryGraph

    _, _, queries, query_vecs = load_corpus()
    embedder = precomputed_embedder(dict(zip(queries, query_vecs)))
    before = peak_rss_mb()
    t = time.perf_counter()
    graph = MemoryGraph.open(db, embedder=embedder)
    graph.search(queries[0], all_videos=True, threshold=0.0, retrieval=retrieval)  # loads vectors and the IVF file
    first_s = time.perf_counter() - t
    since_start = time.time() - started if started else float("nan")
    passes = []
    for part in (queries[1:201], queries[201:401]):
        ms = []
        for q in part:
            t = time.perf_counter()
            graph.search(q, all_videos=True, threshold=0.0, retrieval=retrieval)
            ms.append((time.perf_counter() - t) * 1000)
        passes.append(ms)
    graph.close()
    return {"reopen_first_search_s": first_s,
            "reopen_first_search_since_start_s": since_start,
            "reopen_clip_search_all_ms_p50": pct(passes[0], 50),
            "reopen_clip_search_all_ms_p95": pct(passes[0], 95),
            "reopen_clip_search_all_later_ms_p50": pct(passes[1], 50),
            "reopen_rss_mb": peak_rss_mb(),
            "reopen_rss_before_mb": before}


def reopen(db: str) -> dict:
    """:func:`reopen_and_search` in fresh processes, timed from their start: the default (fused) search, then
    dense search alone in another process (its figures prefixed ``reopen_dense_``)."""
    out = {}
    os.sync()  # a memory written earlier: the gigabytes just built are not still being written back while it opens
    for retrieval, prefix in (("fused", "reopen_"), ("dense", "reopen_dense_")):
        proc = subprocess.run([*SELF, "--reopen", db, "--retrieval", retrieval, "--started", repr(time.time())],
                              stdout=subprocess.PIPE, text=True, check=True, cwd=ROOT)
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        out.update({prefix + key.removeprefix("reopen_"): value for key, value in result.items()})
    return out


def machine() -> str:
    from m3agent.jobs.machine import describe

    return describe()


def render(results: list[dict]) -> str:
    lines = [
        "## Memory core: insert and search (`bench/perf_memory.py`)",
        "",
        f"Machine: {machine()}. Date: {date.today().isoformat()}. Command: "
        "`python -m bench.perf_memory --write docs/BENCHMARKS.md`.",
        "",
        "Real MiniLM vectors of 60k real sentences (package docstrings + M3-Bench answers); above 60k, vectors "
        "synthesised around the real ones (cosine ~0.89 to their source). 500 real M3-Bench questions as queries, "
        "embedded beforehand (latency excludes query embedding). 50 lines per clip, 120 clips per video; half the "
        "lines mention a face tag. Search spans all videos unless noted.",
        "",
        "| nodes | index | insert total | index build | clip insert p50 / p95 | vector top-10 p50 / p95 | recall@10 "
        "| clip search (all videos) p50 / p95 | clip search (one video) p50 | DB bytes/node | IVF file bytes/node "
        "| peak RSS (bench) | reopen: first search / since process start / RSS |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['nodes']:,} | {r['index']} | {r['insert_s']:.1f} s | {r['index_build_s']:.1f} s "
            f"| {r['clip_insert_ms_p50']:.2f} / {r['clip_insert_ms_p95']:.2f} ms "
            f"| {r['vector_search_ms_p50']:.2f} / {r['vector_search_ms_p95']:.2f} ms | {r['recall_at_10']:.3f} "
            f"| {r['clip_search_all_ms_p50']:.2f} / {r['clip_search_all_ms_p95']:.2f} ms "
            f"| {r['clip_search_video_ms_p50']:.2f} ms | {r['db_bytes_per_node']:.0f} | {r['ivf_bytes_per_node']:.0f} "
            f"| {r['rss_mb']:.0f} MB | {r.get('reopen_first_search_s', float('nan')):.2f} s / "
            f"{r.get('reopen_first_search_since_start_s', float('nan')):.2f} s / "
            f"{r.get('reopen_rss_mb', float('nan')):.0f} MB |"
        )
    lines += [
        "",
        "Clip search with the default fused ranking (BM25 from the DB's FTS5 index fused with the vectors) against "
        "the vectors alone, same DB, same queries, p50:",
        "",
        "| nodes | all videos: dense -> fused | one video: dense -> fused |",
        "|---|---|---|",
    ]
    for r in results:
        if "dense_clip_search_all_ms_p50" not in r:
            continue
        da, fa = r["dense_clip_search_all_ms_p50"], r["clip_search_all_ms_p50"]
        dv, fv = r["dense_clip_search_video_ms_p50"], r["clip_search_video_ms_p50"]
        lines.append(f"| {r['nodes']:,} | {da:.2f} -> {fa:.2f} ms ({fa / da:.2f}x) | {dv:.2f} -> {fv:.2f} ms "
                     f"({fv / dv:.2f}x) |")
    lines += [
        "",
        "What a user pays: a fresh process opens the DB (vectors mapped from `memory.db.vec`, the IVF index from "
        "`memory.db.ivf`) and searches all videos, whole clips (the default top 2), dense and fused each in a "
        "process of its own. \"After open\": the first 200 questions, which also read each video's characters "
        "the first time one of its clips comes back; \"later\": the next 200. Resident memory is the peak of the "
        "fused process.",
        "",
        "| nodes | first search since process start (dense / fused) | dense p50 / p95 after open | dense p50 later "
        "| fused p50 / p95 after open | fused p50 later | peak RSS |",
        "|---|---|---|---|---|---|---|",
    ]
    nan = float("nan")
    for r in results:
        if "reopen_dense_clip_search_all_ms_p50" not in r:
            continue
        lines.append(
            f"| {r['nodes']:,} | {r['reopen_dense_first_search_since_start_s']:.2f} s / "
            f"{r['reopen_first_search_since_start_s']:.2f} s "
            f"| {r['reopen_dense_clip_search_all_ms_p50']:.2f} / {r['reopen_dense_clip_search_all_ms_p95']:.2f} ms "
            f"| {r['reopen_dense_clip_search_all_later_ms_p50']:.2f} ms "
            f"| {r['reopen_clip_search_all_ms_p50']:.2f} / {r.get('reopen_clip_search_all_ms_p95', nan):.2f} ms "
            f"| {r.get('reopen_clip_search_all_later_ms_p50', nan):.2f} ms | {r['reopen_rss_mb']:.0f} MB |")
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str, head: str = "## Memory core: insert and search") -> None:
    """Replace the section starting with ``head`` (up to the next ``## ``) or append it."""
    text = path.read_text() if path.exists() else "# Benchmarks\n\nNumbers measured by the scripts in `bench/`.\n\n"
    if head in text:
        start = text.index(head)
        end = text.find("\n## ", start + 1)
        text = text[:start] + section.rstrip("\n") + "\n" + (text[end:] if end != -1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--write", type=Path, default=None, help="update this markdown file")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--reopen", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--started", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--retrieval", default="fused", help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true", help="keep the DBs built (their paths are reported)")
    parser.add_argument("--db", default=None, help="only reopen this kept DB: first search, p50, RSS")
    args = parser.parse_args()
    if args.reopen:
        print(json.dumps(reopen_and_search(args.reopen, args.started, args.retrieval)))
        return
    if args.db:
        print(json.dumps(reopen(args.db), indent=1))
        return
    if args.one:
        print(json.dumps(run_size(args.one, args.keep)))
        return
    saved = RESULTS.exists() and {r["nodes"]: r for r in json.loads(RESULTS.read_text())} or {}
    for n in args.sizes:
        proc = subprocess.run([*SELF, "--one", str(n), *(["--keep"] if args.keep else [])],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
        if proc.returncode != 0:
            sys.exit(f"benchmark at {n} nodes failed")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        saved[result["nodes"]] = result
        RESULTS.write_text(json.dumps([saved[k] for k in sorted(saved)], indent=1) + "\n")
        print(json.dumps(result, indent=1))
    section = render([saved[k] for k in sorted(saved)])
    print(section)
    if args.write:
        write_section(args.write, section)


if __name__ == "__main__":
    main()
