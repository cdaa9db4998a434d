"""An answer's words that no note shown holds: invented, as against read from a wrong line."""

from m3agent.control.records import Answer, Round
from m3agent.eval.grounding import (
    answer_unfound,
    bearing_notes,
    bridge_names,
    mostly_invented,
    nearest_note,
    quoted_answer,
    unfound_words,
)

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


def test_an_answer_is_mostly_invented_when_half_its_words_are_in_no_note():
    assert mostly_invented("Fettini.", NOTES, "What will Peter cook tonight?")
    assert mostly_invented("Fettuccine Alfredo with mushrooms.", NOTES)  # one of three words read
    assert not mostly_invented("Fettuccine with mushrooms.", NOTES)  # one of two read: kept (and flagged)
    assert not mostly_invented("7.", NOTES) and not mostly_invented("", NOTES)  # nothing to call invented
    assert not mostly_invented("Yes.", NOTES, "Is the pasta for everyone?")  # a verdict, whether right or wrong
    assert not mostly_invented("No, it is false.", NOTES) and mostly_invented("Yes, fettini.", NOTES)


def test_the_nearest_note_is_the_one_sharing_most_with_the_question_rare_words_first():
    notes = ["<character_1>'s name is Peter", *NOTES, 'At 02:00 Sarah says: "Peter, the pasta is great."']
    assert nearest_note("What will Peter cook tonight?", notes) == NOTES[0]  # tonight and cook over Peter alone
    assert nearest_note("Where is the umbrella?", notes) is None  # no note shares a word: nothing is quoted
    assert nearest_note("What does Peter do?", []) is None


def test_a_quoted_note_replaces_only_an_answer_mostly_invented():
    question = "What will Peter cook tonight?"
    assert quoted_answer(question, [], NOTES, "Fettini.") == NOTES[0]
    assert quoted_answer(question, [], NOTES, "Pasta with mushrooms.") is None
    assert quoted_answer(question, ['Asked "What will Peter cook?", the user corrected it: "risotto"'], NOTES,
                         "Risotto.") is None  # a lesson shown holds it
    assert quoted_answer(question, [], [], "Fettini.") is None  # nothing was shown to quote


MARKET = ['Sarah is on screen from 00:13 to 00:25.',
          'At 00:13 Sarah says: "Hi, I\'m Sarah. I\'m water red umbrella to the market."',  # as Whisper heard it
          'At 01:31 David says: "The car keys are in the blue bowl on the kitchen table."']


def test_an_answer_read_from_a_line_about_something_else_is_quoted():
    question = "What did Sarah buy at the market?"
    assert bearing_notes(question, MARKET) == MARKET[:2]  # the car keys' line shares no word with the question
    assert unfound_words("Blue bowl.", MARKET, question) == []  # not invented: read, from the wrong line
    assert quoted_answer(question, [], MARKET, "Blue bowl.") == MARKET[1]
    assert quoted_answer(question, [], MARKET, "A red umbrella.") is None
    assert quoted_answer(question, [], MARKET, "A blue umbrella.") is None  # one word of two read right: kept


def test_a_line_naming_whom_a_bearing_line_names_bears_too():
    notes = ['At 00:45 Dmitri says: "I just placed my hairdryer in the filing cabinet."',
             'At 01:10 Dmitri says: "I work as a cashier at the station."',
             'At 01:30 Wanda says: "I am a surveyor."']
    question = "What is the job of the person who moved the hairdryer?"
    assert bearing_notes(question, notes) == notes[:2]  # the second hop: Dmitri's other line
    assert quoted_answer(question, [], notes, "He is a cashier.") is None
    assert quoted_answer(question, [], notes, "A surveyor.") == notes[0]
    assert bearing_notes("Where is the umbrella?", notes) == []


def test_the_person_a_question_only_describes_is_named_by_the_note_nearest_it():
    notes = ['At 00:45 Dmitri says: "I just placed my hairdryer in the filing cabinet."',
             'At 01:30 Wanda says: "Tonight I will cook for Dmitri."']
    assert bridge_names("What is the job of the person who moved the hairdryer?", notes) == ["Dmitri"]
    assert bridge_names("What will Wanda cook tonight?", notes) == []  # the question names her itself
    assert bridge_names("What will be cooked tonight?", notes) == ["Wanda", "Dmitri"]  # "Tonight" starts a sentence
    assert bridge_names("Where is the umbrella?", notes) == []  # no note is near the question


def test_the_follow_up_search_is_read_from_the_config_in_one_place_for_use_and_training():
    from m3agent.config import Config, ControlConfig
    from m3agent.envs.control import ControlEnv
    from m3agent.eval.grounding import follow_up
    from m3agent.factory import build_controller
    from m3agent.models.llm.scripted import ScriptedChat

    assert follow_up(ControlConfig()) is None and follow_up(ControlConfig(follow_names=True)) is bridge_names
    assert ControlEnv(None, control=ControlConfig(follow_names=True)).control.follow is bridge_names
    config = Config()
    on = Config(control=ControlConfig(follow_names=True))
    chat = ScriptedChat([])
    assert build_controller(None, config, chat).step.follow is None
    assert build_controller(None, on, chat).step.follow is bridge_names
