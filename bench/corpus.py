"""Real English sentences and real questions for the memory benchmarks, gathered offline.

Sentences: prose from the docstrings of the installed Python packages plus M3-Bench's answers and
reasoning; queries: M3-Bench's questions. Both are embedded once with the bundled MiniLM and cached
under ``bench/.cache``.
"""

from __future__ import annotations

import json
import random
import re
import sys
import sysconfig
from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parent / ".cache"
M3BENCH = Path(__file__).resolve().parents[1] / "tests" / "data" / "m3bench"
_DOC = re.compile(r'"""(.*?)"""', re.S)
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_OK = re.compile(r"^[A-Z][A-Za-z0-9 ,;:'()\-./%]+[.!?]$")


def _clean(sentence: str) -> str | None:
    s = " ".join(sentence.split())
    if not 40 <= len(s) <= 220 or len(s.split()) < 7 or not _OK.match(s):
        return None
    if sum(c.isalpha() or c == " " for c in s) / len(s) < 0.9:
        return None
    return s


def m3bench_texts() -> tuple[list[str], list[str]]:
    """(questions, answers+reasoning sentences) from the real M3-Bench annotation files."""
    questions, other = [], []
    for name in ("robot.json", "web.json"):
        path = M3BENCH / name
        if not path.exists():
            continue
        for video in json.loads(path.read_text()).values():
            for qa in video.get("qa_list", []):
                questions.append(" ".join(str(qa.get("question", "")).split()))
                for field in ("answer", "reasoning"):
                    for s in _SPLIT.split(str(qa.get(field, ""))):
                        s = " ".join(s.split())
                        if len(s) >= 20:
                            other.append(s)
    return [q for q in dict.fromkeys(questions) if q], list(dict.fromkeys(other))


def docstring_sentences(limit_files: int = 40000) -> list[str]:
    roots = {Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["stdlib"])}
    out: dict[str, None] = {}
    for root in roots:
        for n, path in enumerate(sorted(root.rglob("*.py"))):
            if n > limit_files:
                break
            try:
                text = path.read_text(errors="ignore")
            except OSError:
                continue
            for doc in _DOC.findall(text):
                for paragraph in re.split(r"\n\s*\n", doc):
                    for s in _SPLIT.split(paragraph):
                        c = _clean(s)
                        if c:
                            out.setdefault(c, None)
    return list(out)


def load_corpus(n_sentences: int = 60000, n_queries: int = 500, seed: int = 0):
    """``(sentences, sentence_vectors, queries, query_vectors)``, embedded with the bundled MiniLM."""
    CACHE.mkdir(parents=True, exist_ok=True)
    key = CACHE / f"corpus_{n_sentences}_{n_queries}_{seed}"
    if (key.with_suffix(".npz")).exists():
        data = np.load(key.with_suffix(".npz"), allow_pickle=False)
        meta = json.loads(key.with_suffix(".json").read_text())
        return meta["sentences"], data["sentence_vectors"], meta["queries"], data["query_vectors"]
    questions, other = m3bench_texts()
    pool = list(dict.fromkeys(other + docstring_sentences()))
    rng = random.Random(seed)
    rng.shuffle(pool)
    rng.shuffle(questions)
    sentences, queries = pool[:n_sentences], questions[:n_queries]
    if len(sentences) < n_sentences:
        print(f"warning: only {len(sentences)} sentences found", file=sys.stderr)
    from m3agent.config import EmbedderConfig
    from m3agent.factory import build_embedder

    embedder = build_embedder(EmbedderConfig(batch_size=128))
    from tqdm import tqdm

    chunks = [sentences[i : i + 2048] for i in range(0, len(sentences), 2048)]
    sentence_vectors = np.concatenate([embedder.embed(c) for c in tqdm(chunks, desc="embedding sentences")])
    query_vectors = embedder.embed(queries)
    np.savez(key.with_suffix(".npz"), sentence_vectors=sentence_vectors, query_vectors=query_vectors)
    key.with_suffix(".json").write_text(json.dumps({"sentences": sentences, "queries": queries}))
    return sentences, sentence_vectors, queries, query_vectors
