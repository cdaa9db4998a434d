"""Gold replies: a question of two hops searches its follow-up (the person's name in place of the description) only
once the first hop is shown, as a reader who found the name would; before that it searches the question."""

from types import SimpleNamespace

from m3agent.train.gold import gold_reply

LINES = {0: "Frederik says: Originally I come from Krakow.", 1: "Frederik says: I work as a pharmacist.",
         2: "Ines says: I sell kites on the pier."}


class _Memory:
    """Finds the clips whose line shares a word with the query, never one already shown."""

    def search(self, query, *, video, before_clip, seen):
        words = set(query.lower().replace("?", "").split())
        hits = [c for c, line in LINES.items() if (video, c) not in seen.clips and words & set(line.lower().split())]
        return SimpleNamespace(clips=[SimpleNamespace(id=c) for c in hits])


def _env(shown, asked=()):
    state = SimpleNamespace(notes={c: [LINES[c]] for c in shown}, rounds=[SimpleNamespace(content=q) for q in asked],
                            video_id=7, question=SimpleNamespace(before_clip=None),
                            seen=SimpleNamespace(clips={(7, c) for c in shown}))
    return SimpleNamespace(state=state, round=len(asked), rounds=4, control=SimpleNamespace(memory=_Memory()))


TASK = {"question": "What does the person who grew up in Krakow do for a living?", "answer": "A pharmacist.",
        "evidence": [0, 1], "evidence_queries": {"1": "What does Frederik do for a living?"}}


def test_the_follow_up_is_searched_once_the_first_hop_is_shown():
    reply = gold_reply(_env([0], asked=[TASK["question"]]), TASK)
    assert reply == "Action: [Search]\nContent: What does Frederik do for a living?"


def test_before_the_first_hop_is_shown_the_question_is_searched_not_a_name_not_yet_read():
    reply = gold_reply(_env([2], asked=["kites"]), TASK)
    assert reply == f"Action: [Search]\nContent: {TASK['question']}"


def test_with_every_clip_shown_the_answer_is_given():
    assert gold_reply(_env([0, 1]), TASK) == "Action: [Answer]\nContent: A pharmacist."
