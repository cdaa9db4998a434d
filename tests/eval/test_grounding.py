"""An answer's words that no note shown holds: invented, as against read from a wrong line."""

from m3agent.control.records import Answer, Round
from m3agent.eval.grounding import answer_unfound, unfound_words

NOTES = ['At 01:18 Peter says: "Tonight I will cook pasta with mushrooms for everyone."',
         'At 00:26 Peter says: "Good morning, my name is Peter. I work as a chef"']


def test_a_word_no_note_holds_is_invented():
    assert unfound_words("Fettuccine Alfredo.", NOTES, "What will Peter cook tonight?") == ["fettuccine", "alfredo"]


def test_an_answer_read_from_the_notes_is_not_even_when_wrong():
    assert unfound_words("Pasta with mushrooms.", NOTES) == []
    assert unfound_words("He is a chef.", NOTES, "What will Peter cook tonight?") == []  # the wrong line, not invented


def test_word_forms_numbers_function_words_and_the_question_do_not_count():
    assert unfound_words("Peter cooked the mushroom pasta.", NOTES) == []  # "cooked" is "cook", "mushroom" "mushrooms"
    assert unfound_words("3 + 4 = 7 pastas, not seven.", NOTES) == []  # a total is worked out, never read
    assert unfound_words("For dinner.", NOTES, "What is Peter's plan for dinner?") == []
    assert unfound_words("Pizza, pizza and pizza.", NOTES) == ["pizza"]  # once, however often it is said
    assert unfound_words("", NOTES) == []


def test_an_answer_is_checked_against_its_notes_and_the_lessons_it_was_shown():
    rounds = [Round("search", "What will Peter cook tonight?", by="seed"), Round("answer", "Risotto.")]
    answer = Answer("What will Peter cook tonight?", "Risotto.", rounds, 1.0, notes={2: NOTES})
    assert answer_unfound(answer) == ["risotto"]
    taught = Answer(answer.question, "Risotto.", rounds, 1.0, notes={2: NOTES},
                    lessons=['Asked "What will Peter cook?", the user corrected it: "risotto"'])
    assert answer_unfound(taught) == []  # from a lesson memory holds, not made up
    corrected = [rounds[0], Round("answer", "Risotto.", replaced="Pizza.")]
    assert answer_unfound(Answer(answer.question, "Risotto.", corrected, 1.0, notes={2: NOTES})) == []
    assert answer_unfound(Answer(answer.question, "", rounds, 1.0, error="the model failed")) == []
