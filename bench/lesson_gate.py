"""Where a feedback lesson is about the question asked: the score the control model's lesson gate uses.

Usage: ``python -m bench.lesson_gate [--write docs/RESULTS.md]``.

A lesson carries an answer the control model tends to copy, right for the question it was learned from and wrong
for another. On M3-Bench's real questions (``tests/data/m3bench``, robot and web), each question is scored with the
bundled embedder against the lesson its own correction leaves (``Asked "...", the answer ... was wrong; the user
corrected it: "..."``) and against those of the other questions of its video whose answer differs. For each
threshold: the share of own lessons kept and of other questions' lessons let through. The shipped gate
(``MINILM_LESSON_RELEVANCE``) sits where the two errors are about equal; showing another question's answer costs
more than hiding a lesson (the model answers from memory as it would with none).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from m3agent.eval.feedback import lesson_text
from m3agent.eval.judge import normalized_tokens

M3BENCH = Path(__file__).resolve().parents[1] / "tests" / "data" / "m3bench"
THRESHOLDS = (0.25, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65)


def question_sets(root: Path = M3BENCH,
                  names: tuple[str, ...] = ("robot.json", "web.json")) -> list[list[tuple[str, str]]]:
    """Each video's (question, answer) pairs, for the videos with two or more."""
    sets = []
    for name in names:
        for video in json.loads((root / name).read_text()).values():
            pairs = [(str(q["question"]), str(q["answer"])) for q in video.get("qa_list", [])]
            if len(pairs) > 1:
                sets.append(pairs)
    return sets


def scores(sets: list[list[tuple[str, str]]], embed) -> tuple[np.ndarray, np.ndarray]:
    """(own, other): each question's score against its own lesson, and against the lessons of its video's questions
    with another answer."""
    from tqdm import tqdm

    own, other = [], []
    for pairs in tqdm(sets, desc="videos", unit="video"):
        questions = embed([q for q, _ in pairs])
        lessons = embed([lesson_text(q, "I do not know.", correction=a) for q, a in pairs])
        table = questions @ lessons.T
        answers = [normalized_tokens(a) for _, a in pairs]
        for i in range(len(pairs)):
            own.append(table[i, i])
            other += [table[i, j] for j in range(len(pairs)) if answers[j] != answers[i]]
    return np.asarray(own, np.float32), np.asarray(other, np.float32)


def render(own: np.ndarray, other: np.ndarray, shipped: float) -> str:
    from datetime import date

    from bench.perf_memory import machine

    rows = "\n".join(f"| {t:g}{' (shipped)' if abs(t - shipped) < 1e-9 else ''} | {(own >= t).mean():.1%} | "
                     f"{(other >= t).mean():.1%} |" for t in THRESHOLDS)
    return f"""Machine: {machine()}. Date: {date.today().isoformat()}. Command: `python -m bench.lesson_gate --write docs/RESULTS.md`.

{len(own):,} M3-Bench questions (robot and web) against their own lesson, and {len(other):,} question pairs of one
video with different answers, each question against the other's lesson; bundled all-MiniLM-L6-v2. Own lessons score
{np.percentile(own, 1):.2f} or more in 99% of questions (median {np.median(own):.2f}); another question's lesson scores
{np.percentile(other, 99):.2f} or less in 99% of pairs (median {np.median(other):.2f}).

| threshold | own lessons kept | other questions' lessons let through |
|---|---|---|
{rows}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, default=None, help="update this file's lesson-gate block")
    args = parser.parse_args()
    from m3agent.models.embed.sentence_transformers import (
        MINILM_LESSON_RELEVANCE,
        SentenceTransformerEmbedder,
    )

    own, other = scores(question_sets(), SentenceTransformerEmbedder().embed)
    section = render(own, other, MINILM_LESSON_RELEVANCE)
    print(section)
    if args.write:
        from bench.markers import replace_block

        replace_block(args.write, "lesson-gate", section)


if __name__ == "__main__":
    main()
