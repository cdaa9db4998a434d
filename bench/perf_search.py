"""Lexical, dense and fused search: evidence recall@k and latency on a labeled set built from real text.

Usage: ``python -m bench.perf_search [--group 10] [--limit 0] [--write docs/BENCHMARKS.md]``.

The labeled set: M3-Bench's real web annotation file (tests/data/m3bench/web.json). Each question's reasoning is
split into sentences, which become memory lines of a text source holding the lines of ``--group``
videos (so the other questions of the same videos are hard negatives); the question is the query and its
own reasoning sentences are its evidence. Recall@k: the share of questions with an evidence line among
the top k lines of one search. Three searches over the same DB: BM25 alone (the FTS5 index), the vectors
alone (bundled MiniLM), and their reciprocal-rank fusion (the default). Latency is the search alone:
query vectors are computed beforehand.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from bench.perf_memory import machine  # noqa: E402

M3BENCH = ROOT / "tests" / "data" / "m3bench"
CACHE = ROOT / "bench" / ".cache"
KS = (1, 5, 10)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


def labeled_set(group: int, limit: int = 0):
    """``(sources, queries)``: sources map a name to records; queries are ``(source, question, evidence ids)``."""
    sources: dict[str, list[dict]] = {}
    queries: list[tuple[str, str, set[str]]] = []
    videos = []
    for name in ("web.json",):  # robot.json's reasoning is in Chinese, its questions in English
        videos += [(name.split(".")[0] + ":" + vid, entry) for vid, entry in json.loads((M3BENCH / name).read_text()).items()]
    for start in range(0, len(videos), group):
        source = f"set{start // group:04d}"
        records = sources.setdefault(source, [])
        for vid, entry in videos[start : start + group]:
            for qa in entry.get("qa_list", []):
                question = " ".join(str(qa.get("question", "")).split())
                parts = [s for s in _SENTENCE.split(" ".join(str(qa.get("reasoning", "")).split())) if len(s) > 15]
                if not question or not parts:
                    continue
                ids = {f"{vid}:{qa.get('question_id', len(records))}:{i}" for i in range(len(parts))}
                records.extend({"id": f"{vid}:{qa.get('question_id', len(records))}:{i}", "text": s}
                               for i, s in enumerate(parts))
                queries.append((source, question, ids))
        if limit and len(queries) >= limit:
            break
    return sources, queries[:limit] if limit else queries


def run(group: int, limit: int) -> dict:
    from tqdm import tqdm

    from bench.perf_memory import precomputed_embedder
    from m3agent.config import EmbedderConfig, MemoryConfig
    from m3agent.factory import build_embedder
    from m3agent.memory import MemoryGraph
    from m3agent.memory.text_sources import parse_record

    sources, queries = labeled_set(group, limit)
    minilm = build_embedder(EmbedderConfig(batch_size=128))
    texts = sorted({q for _, q, _ in queries})
    qvecs = dict(zip(texts, minilm.embed(texts)))
    db = Path(tempfile.mkdtemp(prefix="m3search-")) / "search.db"
    n_lines = 0
    with MemoryGraph.open(db, MemoryConfig(), embedder=minilm) as graph:
        for source, records in tqdm(sources.items(), desc="remember", unit="source"):
            graph.remember(source, [parse_record(r) for r in records])
            n_lines += len(records)
    modes = {"lexical (BM25, FTS5)": "lexical", "dense (MiniLM)": "dense", "fused (RRF, the default)": "fused"}
    out = {"lines": n_lines, "sources": len(sources), "queries": len(queries), "modes": {}}
    for label, mode in modes.items():
        hits = {k: 0 for k in KS}
        ms = []
        with MemoryGraph.open(db, MemoryConfig(), embedder=precomputed_embedder(qvecs), readonly=True) as graph:
            graph.search(texts[0], video=queries[0][0], lines=1)  # loads the vectors
            for source, question, evidence in tqdm(queries, desc=label, unit="query"):
                t = time.perf_counter()
                found = [line["id"] for line in
                         graph.search(question, video=source, lines=max(KS), retrieval=mode).lines]
                ms.append((time.perf_counter() - t) * 1000)
                for k in KS:
                    hits[k] += bool(evidence & set(found[:k]))
        out["modes"][label] = {f"recall@{k}": hits[k] / len(queries) for k in KS} | {
            "p50_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95))}
    for p in db.parent.iterdir():
        p.unlink()
    db.parent.rmdir()
    return out


def render(result: dict, command: str) -> str:
    lines = [
        "## Search quality: lexical, dense and fused (`bench/perf_search.py`)",
        "",
        f"Machine: {machine()}. Date: {date.today().isoformat()}. Command: `{command}`.",
        "",
        f"Labeled set built from M3-Bench's real web.json annotations: each question's reasoning sentences are memory "
        f"lines (its evidence) of a text source pooling several videos' questions, {result['lines']:,} lines in "
        f"{result['sources']} sources; {result['queries']:,} questions as queries. Recall@k: a question's evidence "
        "line among the top k lines of one search. Latency: the search alone (query vectors computed beforehand).",
        "",
        "| search | " + " | ".join(f"recall@{k}" for k in KS) + " | p50 / p95 latency |",
        "|---|" + "---|" * len(KS) + "---|",
    ]
    for label, row in result["modes"].items():
        lines.append(f"| {label} | " + " | ".join(f"{row[f'recall@{k}']:.3f}" for k in KS)
                     + f" | {row['p50_ms']:.2f} / {row['p95_ms']:.2f} ms |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", type=int, default=10, help="videos whose questions share one text source")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions (0: all)")
    parser.add_argument("--write", type=Path, default=None, help="update this markdown file")
    args = parser.parse_args()
    result = run(args.group, args.limit)
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / "results_search.json").write_text(json.dumps(result, indent=1))
    command = "python -m bench.perf_search" + (f" --group {args.group}" if args.group != 10 else "") + (
        f" --limit {args.limit}" if args.limit else "") + (f" --write {args.write}" if args.write else "")
    section = render(result, command)
    print(section)
    if args.write:
        from bench.markers import replace_block

        replace_block(args.write, "search-quality", section.split("\n", 2)[2])  # the table, without its heading


if __name__ == "__main__":
    main()
