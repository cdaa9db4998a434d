"""One MemoryBench case's raw score by its dataset's metric, and whether the metric-path user calls it right.

Locomo: token F1 by question category (1: each reference part against its best answer part; 3: the first
reference alternative; 5: adversarial, right when the answer says the conversation does not mention it).
DialSim: the reference itself, else a judge asked "Correct" or "Wrong". LexEval: ROUGE-L. WritingPrompts:
METEOR (exact matches). The rest are scored by a judge model through any chat backend (an integer on the
dataset's scale); a judge reply without one is asked again, then recorded as unparseable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from m3agent.eval.memorybench.datasets import dataset_info
from m3agent.eval.memorybench.metrics import best_f1, meteor, normalize_answer, rouge_l, token_f1
from m3agent.eval.memorybench.records import MBRecord
from m3agent.models.llm.base import ChatModel

ADVERSARIAL = ("not mentioned", "no information available")
_NUMBER = re.compile(r"\b(10|[0-9])\b")


@dataclass(frozen=True)
class Score:
    value: float | None  # the raw score on the dataset's scale; None: the judge gave none
    metric: str
    problem: str | None = None


def locomo_f1(prediction: str, info: dict) -> float:
    reference = info.get("golden_answer", info.get("answer", ""))
    category = int(info.get("category", 0) or 0)
    if category == 5:
        text = str(prediction).lower()
        return float(any(phrase in text for phrase in ADVERSARIAL))
    reference = str(reference)
    if category == 3:
        reference = reference.split(";")[0]
    if category == 1:
        parts = [p for p in str(prediction).split(",") if p.strip()] or [str(prediction)]
        refs = [r for r in reference.split(",") if r.strip()] or [reference]
        return sum(max(token_f1(p, r) for p in parts) for r in refs) / len(refs)
    return best_f1(prediction, reference)


JUDGE_SYSTEM = ("You grade an assistant's answer. Reply with a single integer from {low} to {high} "
                "({high} is best) and nothing else.")
DIALSIM_SYSTEM = ('You judge whether a prediction answers a question correctly, given the true answer. '
                  'Reply with "Correct" or "Wrong" only.')


def _judge_messages(record: MBRecord, prediction: str, low: int, high: int) -> list[dict]:
    shown = {k: v for k, v in record.info.items() if k not in ("id", "domain")}
    return [{"role": "system", "content": JUDGE_SYSTEM.format(low=low, high=high)},
            {"role": "user", "content": f"Request:\n{record.question()[:4000]}\n\nReference and criteria:\n"
                                        f"{json.dumps(shown, ensure_ascii=False)[:4000]}\n\nAnswer:\n{prediction[:4000]}"}]


def parse_grade(text: str, low: int, high: int) -> float | None:
    text = re.sub(r"<think>.*?</think>", "", str(text), flags=re.S)
    for match in _NUMBER.finditer(text):
        value = int(match.group(1))
        if low <= value <= high:
            return float(value)
    return None


def score_case(record: MBRecord, prediction: str, judge: ChatModel | None, retries: int = 1) -> Score:
    info = dataset_info(record.dataset)
    kind = info.metric
    reference = record.reference()
    if kind == "locomo_f1":
        return Score(locomo_f1(prediction, record.info), kind)
    if kind == "rouge_l":
        return Score(rouge_l(prediction, reference or ""), kind)
    if kind == "meteor":
        return Score(meteor(prediction, reference or ""), kind)
    if kind == "dialsim_accuracy":
        if normalize_answer(prediction) in (normalize_answer(reference), normalize_answer(f"{reference}.")):
            return Score(1.0, kind)
        if judge is None:
            return Score(0.0, kind)
        messages = [{"role": "system", "content": DIALSIM_SYSTEM},
                    {"role": "user", "content": f"Question: {record.question()[-2000:]}\nTrue answer: {reference}\n"
                                                f"Prediction: {prediction[:2000]}"}]
        for _ in range(retries + 1):
            text = judge.chat(messages, max_tokens=8, temperature=0.0).text.strip().lower()
            if text.startswith(("correct", "wrong")):
                return Score(float(text.startswith("correct")), kind)
        return Score(0.0, kind, f"the judge answered neither Correct nor Wrong: {text[:60]!r}")
    low, high = {"judge_5": (1, 5), "judge_10": (1, 10), "checklist": (0, 10)}[kind]
    if judge is None:
        return Score(None, kind, "this dataset is scored by a judge model; none was given")
    messages = _judge_messages(record, prediction, low, high)
    for _ in range(retries + 1):
        text = judge.chat(messages, max_tokens=16, temperature=0.0).text
        grade = parse_grade(text, low, high)
        if grade is not None:
            return Score(grade / 10.0 if kind == "checklist" else grade, kind)  # checklists score 0..1
    return Score(None, kind, f"the judge gave no grade from {low} to {high}: {text[:60]!r}")


def metric_verdict(record: MBRecord, prediction: str, judge: ChatModel | None) -> bool:
    """The metric-path user's view (corpus datasets): Locomo F1 > 0.5, DialSim correct."""
    score = score_case(record, prediction, judge)
    if dataset_info(record.dataset).metric == "locomo_f1":
        return (score.value or 0.0) > 0.5
    return bool(score.value)
