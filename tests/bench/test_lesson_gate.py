"""The lesson gate's calibration on M3-Bench's real questions."""

import numpy as np
import pytest

from bench.lesson_gate import M3BENCH, question_sets, render, scores


def test_each_question_is_scored_against_its_own_lesson_and_other_answers_lessons(embedder):
    sets = [[("Where is the cup?", "On the table."), ("Who cooks?", "Bob."), ("Who cleans?", "Bob")]]
    own, other = scores(sets, embedder.embed)
    assert len(own) == 3  # every question, its own lesson
    assert len(other) == 4  # "Who cooks?" and "Who cleans?" share an answer: not against each other
    assert max(other) < min(own)


def test_the_section_gives_each_threshold_its_two_errors():
    own, other = np.array([0.7, 0.6, 0.5], np.float32), np.array([0.1, 0.2, 0.56, 0.3], np.float32)
    section = render(own, other, 0.55)
    assert "| 0.55 (shipped) | 66.7% | 25.0% |" in section and "| 0.25 | 100.0% | 50.0% |" in section
    assert "3 M3-Bench questions" in section and "4 question pairs" in section


def test_the_real_annotations_give_every_video_with_two_questions():
    sets = question_sets()
    assert len(sets) > 900 and all(len(pairs) > 1 for pairs in sets)
    assert len(question_sets(names=("robot.json",))) == 100 and (M3BENCH / "web.json").exists()


@pytest.mark.models
def test_the_shipped_gate_keeps_own_lessons_and_stops_other_questions_answers():
    """On the robot videos' real questions (the calibration used robot and web): the shipped threshold keeps
    nearly every lesson about the question asked and lets few of another question's through."""
    from m3agent.models.embed.sentence_transformers import (
        MINILM_LESSON_RELEVANCE,
        SentenceTransformerEmbedder,
    )

    embedder = SentenceTransformerEmbedder()
    assert embedder.lesson_threshold == MINILM_LESSON_RELEVANCE > embedder.relevance_threshold
    own, other = scores(question_sets(names=("robot.json",)), embedder.embed)
    assert np.mean(own >= MINILM_LESSON_RELEVANCE) > 0.95 and np.mean(other >= MINILM_LESSON_RELEVANCE) < 0.03
