"""Per-case metrics of MemoryBench (token F1, accuracy, ROUGE-L) and the min-max normalization.

Token F1 and exact match normalize text the SQuAD way (lower case, punctuation and English articles
dropped, whitespace collapsed); Chinese text is compared character by character. ROUGE-L is the
F-measure of the longest common subsequence of tokens. A case's score is normalized with its dataset's
published min and max, ``(s - min) / (max - min)`` clipped to [0, 1]; the headline is the micro mean
(every case weighs the same, whatever its dataset).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping

from m3agent.eval.overlap import overlap_f1

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation) | set("，。！？、；：“”‘’（）《》【】")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def normalize_answer(text: object) -> str:
    text = str(text).lower()
    text = "".join(c for c in text if c not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def tokens(text: object) -> list[str]:
    """Words of a normalized answer; Chinese characters count one by one."""
    out: list[str] = []
    for word in normalize_answer(text).split():
        if _CJK.search(word):
            out.extend(c for c in word if not c.isspace())
        else:
            out.append(word)
    return out


def token_f1(prediction: object, reference: object) -> float:
    """MemoryBench's F1 (SQuAD's normalisation, Chinese characters one by one; two empty answers agree)."""
    pred, ref = tokens(prediction), tokens(reference)
    if not pred or not ref:
        return float(pred == ref)
    return overlap_f1(pred, ref)


def best_f1(prediction: object, references: object) -> float:
    """F1 against the closest of several references (a list), or the one."""
    refs = references if isinstance(references, list | tuple) else [references]
    return max((token_f1(prediction, r) for r in refs), default=0.0)


def exact_match(prediction: object, reference: object) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def accuracy(prediction: object, reference: object) -> float:
    """1.0 when the answer is the reference (normalized), or starts with it as a choice ("B", "B. ...")."""
    pred, ref = normalize_answer(prediction), normalize_answer(reference)
    if not ref:
        return 0.0
    if pred == ref:
        return 1.0
    return float(len(ref) <= 2 and pred.split()[:1] == [ref])


def rouge_l(prediction: object, reference: object) -> float:
    pred, ref = tokens(prediction), tokens(reference)
    if not pred or not ref:
        return 0.0
    lcs = _lcs(pred, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(pred), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def _lcs(a: list[str], b: list[str]) -> int:
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


METRICS = {"f1": best_f1, "accuracy": accuracy, "exact_match": exact_match, "rouge_l": rouge_l}


def min_max(score: float, low: float, high: float) -> float:
    """A raw score on its dataset's published scale, clipped to [0, 1]."""
    if high <= low:
        return 0.0
    return min(1.0, max(0.0, (score - low) / (high - low)))


def micro_mean(scores: Iterable[float]) -> float:
    values = list(scores)
    return sum(values) / len(values) if values else float("nan")


def macro_by(groups: Mapping[str, list[float]]) -> dict[str, float]:
    return {name: micro_mean(values) for name, values in sorted(groups.items())}


def meteor(prediction: object, reference: object, alpha: float = 0.9, beta: float = 3.0, gamma: float = 0.5) -> float:
    """METEOR with exact unigram matches only (no stems or WordNet synonyms, which need data offline
    machines lack): the harmonic mean weighted to recall, times a penalty for fragmented matches."""
    hyp, ref = str(prediction).lower().split(), str(reference).lower().split()
    if not hyp or not ref:
        return 0.0
    used: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for i, word in enumerate(hyp):
        for j, other in enumerate(ref):
            if j not in used and word == other:
                used.add(j)
                pairs.append((i, j))
                break
    matches = len(pairs)
    if not matches:
        return 0.0
    precision, recall = matches / len(hyp), matches / len(ref)
    fmean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    chunks = 1 + sum(1 for (a, b), (c, d) in zip(pairs, pairs[1:]) if not (c == a + 1 and d == b + 1))
    return fmean * (1 - gamma * (chunks / matches) ** beta)
