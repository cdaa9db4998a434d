"""Feedback lessons given to training tasks: seeded, from the same memory's other questions, now and then one
about the task's own question."""

from m3agent.train.lessons import add_lessons


def _tasks():
    return [{"question": f"Where is thing {n} of world {w}?", "answer": f"In box {n}{w}.", "memory": f"w{w}.db",
             "video": None} for w in range(20) for n in range(6)]


def test_lessons_are_seeded_and_given_to_about_the_share_asked():
    first, again, other = _tasks(), _tasks(), _tasks()
    given = add_lessons(first, 0.3, seed=5)
    assert given == add_lessons(again, 0.3, seed=5) and first == again
    add_lessons(other, 0.3, seed=6)
    assert other != first
    assert 0.15 * len(first) < given < 0.45 * len(first) and given == sum("lessons" in t for t in first)
    none = _tasks()
    assert add_lessons(none, 0.0, seed=5) == 0 and not any("lessons" in t for t in none)


def test_lessons_correct_questions_of_the_same_memory_and_sometimes_the_tasks_own():
    tasks = _tasks()
    add_lessons(tasks, 1.0, seed=3)
    own = 0
    for task in tasks:
        world = task["memory"][1:-3]
        assert 1 <= len(task["lessons"]) <= 4
        for lesson in task["lessons"]:
            assert lesson.startswith('Asked "Where is thing ') and f"of world {world}?" in lesson
            asked, _, corrected = lesson.partition("the user corrected it: ")
            number = asked.split("thing ")[1].split(" ")[0]
            mine = task["question"] in asked
            own += mine
            if mine and task.get("overruled"):  # the user called memory's answer wrong and gave another
                assert corrected == f'"{task["answer"]}".' and task["answer"] != f"In box {number}{world}."
                assert f'the answer "{task["overruled"]}" was wrong' in lesson
                assert task["overruled"] == f"In box {number}{world}."
                continue
            assert corrected == f'"In box {number}{world}.".'  # the right answer of the question it is about
            assert f'the answer "In box {number}{world}." was wrong' not in lesson  # the wrong one is another's
    assert 0.1 * len(tasks) < own < 0.4 * len(tasks)
    more = _tasks()
    add_lessons(more, 1.0, seed=3, corrections=0.8)
    assert sum(bool(t.get("corrected")) for t in more) > 0.6 * len(more)


def test_lessons_are_about_the_questions_most_like_the_tasks():
    asked = ["What time does the Oslo train leave, according to the text?", "Where is the kite?",
             "What does the sign say, according to the text?", "Who owns the dog?"]
    tasks = [{"question": q, "answer": f"Answer {n}.", "memory": "m.db", "video": None} for n, q in enumerate(asked)]
    add_lessons(tasks, 1.0, seed=1, most=1)
    first = next(x for x in tasks[0]["lessons"] if "Oslo" not in x)
    assert first.startswith('Asked "What does the sign say, according to the text?"')


def test_a_memory_with_one_question_gives_only_lessons_about_it():
    lessons = []
    for seed in range(20):
        tasks = [{"question": "Where is the kite?", "answer": "On the roof.", "memory": "one.db", "video": None}]
        add_lessons(tasks, 1.0, seed=seed)
        lessons += tasks[0].get("lessons", [])
    assert lessons and all(x.startswith('Asked "Where is the kite?", the answer "I do not know." was wrong') and
                           x.endswith('"On the roof.".') for x in lessons)


def test_a_task_corrected_before_is_marked_and_half_of_them_hide_their_evidence():
    tasks = [dict(t, evidence=[n % 3, 3]) for n, t in enumerate(_tasks())]
    add_lessons(tasks, 1.0, seed=3)
    corrected = [t for t in tasks if t.get("corrected")]
    assert corrected and all(any(t["question"] in x for x in t["lessons"]) for t in corrected)
    assert not any(any(t["question"] in x for x in t["lessons"]) for t in tasks if not t.get("corrected"))
    hidden = [t for t in corrected if "hidden" in t]
    assert 0.25 * len(corrected) < len(hidden) < 0.75 * len(corrected)
    assert all(t["hidden"] == sorted(set(t["evidence"])) for t in hidden)
    assert not any("hidden" in t for t in tasks if not t.get("corrected"))  # only a correction can answer them
    plain = _tasks()  # no evidence known: nothing to hide
    add_lessons(plain, 1.0, seed=3)
    assert any(t.get("corrected") for t in plain) and not any("hidden" in t for t in plain)


def test_an_overruled_task_answers_with_the_users_correction_not_memorys_line():
    tasks = [dict(t, evidence=[1], worked=f"{t['answer']} (worked)") for t in _tasks()]
    truth = {t["question"]: t["answer"] for t in tasks}
    add_lessons(tasks, 1.0, seed=4, corrections=1.0)
    overruled = [t for t in tasks if t.get("overruled")]
    assert overruled and not any("hidden" in t for t in overruled)
    for task in overruled:
        assert task["overruled"] == truth[task["question"]] != task["answer"]
        assert task["answer"] in truth.values() and "worked" not in task  # another answer of its world, as given
        own = next(x for x in task["lessons"] if x.startswith(f'Asked "{task["question"]}"'))
        assert own.endswith(f'the user corrected it: "{task["answer"]}".')
    for task in tasks:  # lessons about an overruled question give its true answer, not the overruling one
        for lesson in task["lessons"]:
            asked = lesson.split('"')[1]
            if asked != task["question"]:
                assert lesson.endswith(f'"{truth[asked]}".')
