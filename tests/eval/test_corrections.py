"""Corrections held to: which lessons correct the question asked, and when an answer repeats a rejected one."""

from m3agent.eval.corrections import corrected_answer, corrections_for, held_answer
from m3agent.eval.feedback import correction_of, lesson_text

DOG = lesson_text("What is the name of Tom's dog?", "Bella.", correction="Max.")
NEWS = lesson_text("What did the woman who writes the news write about today?", "She wrote two stories.",
                   correction="The new park and the river.")


def test_a_correction_lesson_reads_back_as_it_was_written():
    assert correction_of(DOG) == ("What is the name of Tom's dog?", "Bella.", "Max.")
    quoted = lesson_text('What does the sign "EXIT" mean?', 'It says "open".', correction='"Way out".')
    assert correction_of(quoted) == ('What does the sign "EXIT" mean?', 'It says "open".', '"Way out".')
    liked = lesson_text("Where is the cat?", "On the mat.", satisfaction=9.0)
    assert liked and correction_of(liked) is None  # only corrections say what is wrong and what is right


def test_only_lessons_about_the_question_itself_are_held():
    lessons = [NEWS, DOG, "Asked something else entirely.", DOG.replace("Tom's dog", "Tom's cat")]
    assert corrections_for("what is the name of Tom's dog", lessons) == [("Bella.", "Max.")]  # case, punctuation
    assert corrections_for("Where is Tom's dog?", lessons) == []


def test_an_answer_that_repeats_the_rejected_one_gives_the_correction():
    news = corrections_for("What did the woman who writes the news write about today?", [NEWS])
    assert corrected_answer("Two stories.", news) == "The new park and the river."  # the same answer, shorter
    assert corrected_answer("She wrote about the new park and the river.", news) is None  # already right
    assert corrected_answer("Nothing yet.", news) is None  # another answer: the model's to give
    dog = corrections_for("What is the name of Tom's dog?", [DOG])
    assert corrected_answer("Bella", dog) == "Max." and corrected_answer("Max, not Bella.", dog) is None
    numbers = [("Seven kilometers.", "Ten kilometers.")]
    assert corrected_answer("Seven kilometers.", numbers) == "Ten kilometers."
    assert corrected_answer("Eight kilometers.", numbers) is None  # a number apart is another answer


def test_the_factorys_controller_holds_to_corrections_unless_told_not_to(kitchen):
    from m3agent.config import Config, load_config
    from m3agent.control import Question
    from m3agent.factory import build_controller
    from m3agent.models.llm.scripted import ScriptedChat

    kitchen.remember_lesson(kitchen.video, 1, lesson_text("Who plays guitar?", "Alice.", correction="Bob."))
    reply = ["Action: [Answer]\nContent: Alice."]
    held = build_controller(kitchen, Config(), ScriptedChat(reply)).answer(Question("Who plays guitar?"))
    assert held.answer == "Bob." and held.rounds[-1].replaced == "Alice."
    off = load_config(None, {}, ["control.hold_corrections=false"])
    assert build_controller(kitchen, off, ScriptedChat(reply)).answer(Question("Who plays guitar?")).answer == "Alice."
    assert held_answer("Who plays guitar?", [], [], "Alice.") is None  # no lesson, nothing held
