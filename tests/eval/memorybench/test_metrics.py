"""Metrics and the published normalization, against values worked out by hand."""

import pytest

from m3agent.eval.memorybench.datasets import dataset_info, groups_of, scale
from m3agent.eval.memorybench.metrics import meteor, micro_mean, min_max, rouge_l, token_f1
from m3agent.eval.memorybench.scoring import locomo_f1, parse_grade


def test_token_f1_by_hand():
    # prediction "the grey cat Pixel" -> [grey, cat, pixel]; reference "Pixel" -> [pixel]: P 1/3, R 1, F1 0.5
    assert token_f1("the grey cat Pixel", "Pixel") == pytest.approx(0.5)
    assert token_f1("Bristol.", "bristol") == 1.0
    assert token_f1("", "x") == 0.0


def test_rouge_l_by_hand_in_english_and_chinese():
    # LCS of [w x y z] and [w y z q] is [w y z]: P 3/4, R 3/4
    assert rouge_l("w x y z", "w y z q") == pytest.approx(0.75)
    assert rouge_l("盗窃罪成立", "构成盗窃罪") == pytest.approx(0.6)  # chars: LCS 盗窃罪 = 3 of 5 and 5


def test_meteor_exact_matches():
    assert meteor("the cat sat", "the cat sat") == pytest.approx(1 - 0.5 * (1 / 3) ** 3)
    assert meteor("dog", "the cat") == 0.0


def test_locomo_categories():
    assert locomo_f1("Pixel", {"golden_answer": "Pixel", "category": 4}) == 1.0
    assert locomo_f1("Lisbon", {"golden_answer": "Lisbon; Portugal", "category": 3}) == 1.0
    assert locomo_f1("It is not mentioned in the conversation", {"golden_answer": "x", "category": 5}) == 1.0
    assert locomo_f1("Bristol, pottery", {"golden_answer": "pottery, Bristol", "category": 1}) == 1.0
    assert locomo_f1("Bristol", {"golden_answer": "pottery, Bristol", "category": 1}) == pytest.approx(0.5)


def test_normalization_with_the_published_scales():
    assert scale("Open-Domain", "NFCats") == (1, 5)
    assert min_max(4, 1, 5) == pytest.approx(0.75)  # (4 - 1) / (5 - 1)
    assert min_max(0.15, *scale("Legal", "LexEval-QA")) == pytest.approx(0.15 / 0.3692307652260355)
    assert min_max(9.5, 1, 9) == 1.0 and min_max(-1, 0, 1) == 0.0
    assert scale("LiSo", "Locomo-7") == (0, 1.0)  # each Locomo config counts as Locomo
    assert groups_of("JRE-L") == ("Academic&Knowledge", "SiSo")
    assert micro_mean([1.0, 0.0, 0.5]) == pytest.approx(0.5)
    assert dataset_info("LexEval-Judge").long_output and not dataset_info("NFCats").long_output


def test_judge_grades_are_read_from_the_reply():
    assert parse_grade("I would give it a 4 out of 5.", 1, 5) == 4.0
    assert parse_grade("<think>maybe 9</think> Score: 7", 1, 10) == 7.0
    assert parse_grade("excellent", 1, 5) is None
    assert parse_grade("9", 1, 5) is None
