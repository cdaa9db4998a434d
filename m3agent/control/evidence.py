"""The clips an answer rests on, for people: the best-scoring clips its searches returned, each with
its memory line closest to the question. ``m3agent demo`` prints them; the app makes them clickable."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from m3agent.control.records import Answer


def best_evidence(answer: Answer, embed: Callable[[Sequence[str]], np.ndarray], limit: int = 2) -> list[dict]:
    """Up to ``limit`` clips (``{"clip", "start", "end", "score", "line"}``), best score first; ``embed``
    turns texts into unit vectors (the memory's embedder)."""
    best: dict[int, dict] = {}
    for hit in answer.evidence:
        if hit["clip"] not in best or hit["score"] > best[hit["clip"]]["score"]:
            best[hit["clip"]] = dict(hit)
    chosen = sorted(best.values(), key=lambda h: -h["score"])[:limit]
    for item in chosen:
        lines = answer.notes.get(item["clip"], [])
        if lines:
            vectors = embed([answer.question] + lines)
            item["line"] = lines[int(np.argmax(vectors[1:] @ vectors[0]))]
        else:
            item["line"] = ""
    return chosen
