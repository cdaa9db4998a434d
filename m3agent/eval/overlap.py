"""The F1 of two token lists: what every word-overlap score here counts, whatever tokens it compares."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def overlap_f1(prediction: Sequence[str], reference: Sequence[str]) -> float:
    """Harmonic mean of the shared tokens' precision and recall (a token counts as often as both hold it)."""
    same = sum((Counter(prediction) & Counter(reference)).values())
    if not same:
        return 0.0
    precision, recall = same / len(prediction), same / len(reference)
    return 2 * precision * recall / (precision + recall)
