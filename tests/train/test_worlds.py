"""Synthetic training worlds: seeded, well formed, every M3-Bench type asked with its evidence, a question asked
before a change, and nothing shared with what we evaluate on (the mini M3-Bench and the demo episode)."""

import ast
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from m3agent.eval.annotations import M3_TYPES
from m3agent.train import vocabulary as vocab
from m3agent.train.worlds import (
    BEFORE_CHANGE,
    MAX_LINE_WORDS,
    NUMBERS,
    TYPES,
    Line,
    World,
    clip_of,
    generate_world,
    generate_worlds,
)

ROOT = Path(__file__).resolve().parents[2]
EVALUATION = {  # what we evaluate on: the files we must never train on
    "scripts": ROOT / "bench" / "m3mini" / "scripts.py",
    "episode": ROOT / "m3agent" / "samples" / "episode.py",
    "test_episode": ROOT / "tests" / "episode.py",
    "screen_text": ROOT / "m3agent" / "samples" / "screen_text.py",
    "annotations": ROOT / "bench" / "m3mini" / "m3mini.json",
}
#: function words: what two texts may share without sharing content
STOP = set("""a an the of in on at to for from by with into under near behind and or so than what when i my me he
    she it its his her you your we our they them their is are was were be been am do does did not no this that these
    those as up out off over just all some each both own""".split())


def stem(word: str) -> str:
    word = word.lower().removesuffix("'s")
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("es", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + replacement
    return word


def words(text: str) -> set[str]:
    return {stem(w) for w in re.findall(r"[a-z]+(?:'[a-z]+)?", text.lower()) if w not in STOP}


def normal(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def _strings(path: Path) -> list[str]:
    """The string constants of a Python file, without its docstrings: its lines, questions, names."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef)
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs]


@cache
def evaluation_texts() -> tuple[str, ...]:
    """Every line, question, answer and name of the evaluation files, parsed from the files themselves."""
    texts = [s for key in ("scripts", "episode", "test_episode", "screen_text") for s in _strings(EVALUATION[key])]
    for video in json.loads(EVALUATION["annotations"].read_text()).values():
        for qa in video["qa_list"]:
            texts += [qa["question"], qa["answer"], qa["reasoning"]]
    return tuple(t for t in texts if t.strip())


@cache
def worlds_2000() -> tuple[World, ...]:
    return tuple(generate_worlds(2000, 0))


def test_evaluation_files_are_parsed():
    texts = evaluation_texts()
    joined = " ".join(texts)
    assert "Where are the car keys?" in texts and "Peter" in joined and "Toronto" in joined and "violin" in joined
    assert len(texts) > 60


# ------------------------------------------------------------------------------------------------ determinism
def test_a_world_depends_on_its_seed_and_index_alone():
    random.seed(1)
    first = generate_worlds(12, 3)
    random.seed(2)
    assert generate_worlds(12, 3) == first
    assert generate_world(3, 7) == first[7]  # not on the worlds drawn before it
    assert generate_world(3, 7) != generate_world(3, 8) and generate_world(3, 7) != generate_world(4, 7)
    assert len({w.id for w in first}) == len(first)


def test_a_world_is_the_same_in_another_process():
    """Nothing depends on hash order (``PYTHONHASHSEED``) or on the process."""
    code = ("import json; from m3agent.train.worlds import generate_worlds; "
            "print(json.dumps([w.to_dict() for w in generate_worlds(40, 5)]))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd=ROOT)
    assert json.loads(out.stdout) == json.loads(json.dumps([w.to_dict() for w in generate_worlds(40, 5)]))


def test_thousands_of_worlds_are_all_different():
    scripts = {tuple(line.text for line in w.scenes) for w in worlds_2000()}
    assert len(scripts) == 2000
    people = Counter(tuple(sorted(p.name for p in w.people)) for w in worlds_2000())
    assert people.most_common(1)[0][1] <= 2


def test_phrasings_vary():
    """Each fact kind is said in several ways, so a model learns to read, not one template."""
    openers = Counter(re.sub(r"[A-Z][a-z]+\W*$", "", line.text.split(".")[0].split(",")[0])
                      for w in worlds_2000()[:300] for line in w.scenes if "intro" in line.facts)
    assert len(openers) >= 5
    openings = {a.question.split()[0].rstrip(",") for w in worlds_2000()[:300] for a in w.asks}
    assert {"Where", "Who", "What", "How", "Which", "In", "According"} <= openings
    locations = {a.question.split(" the ")[0] for w in worlds_2000()[:300] for a in w.asks if a.kind == BEFORE_CHANGE}
    assert len(locations) >= 2


# ------------------------------------------------------------------------------------------------ shape
INTRODUCTION = r"(my name is|my name's|I'm|I am|call me|This is) {name}\b"


@pytest.mark.parametrize("index", range(0, 400, 7))
def test_a_world_is_a_video_script_of_15_second_scenes(index):
    world = generate_world(11, index)
    assert 3 <= len(world.people) <= 4 and len({p.name for p in world.people}) == len(world.people)
    assert 8 <= len(world.scenes) <= 14 and len(world.scenes) % 2 == 0  # the end is a clip boundary
    assert [line.scene for line in world.scenes] == list(range(len(world.scenes)))
    assert world.duration == 15 * len(world.scenes) and world.clips == len(world.scenes) // 2
    empty = [line.scene for line in world.scenes if line.speaker is None]
    assert empty and all(not world.scenes[s].text for s in empty)
    assert len({clip_of(s) for s in empty}) == len(empty)  # never a whole clip without speech
    assert all(len(line.text.split()) <= MAX_LINE_WORDS for line in world.scenes)
    for person in world.people:  # everyone introduces themself in their first line, in the first person
        first = next(line for line in world.scenes if line.speaker == person.key)
        assert re.search(INTRODUCTION.format(name=person.name), first.text), first.text
        assert "intro" in first.facts
        spoken = " ".join(line.text for line in world.scenes if line.speaker == person.key)
        assert person.job in spoken and person.workplace in spoken
    assert len({p.voice for p in world.people}) == len(world.people)
    assert sorted(p.photo for p in world.people) == list(range(len(world.people)))


def test_people_state_facts_in_the_first_person():
    kinds = Counter(kind for w in worlds_2000()[:500] for line in w.scenes for kind in line.facts)
    assert {"intro", "job", "town", "relation", "like", "dislike", "plan", "put", "move", "buy", "buy-more",
            "advice"} <= set(kinds)
    for world in worlds_2000()[:200]:
        for person in world.people:
            said = " ".join(line.text for line in world.scenes if line.speaker == person.key)
            if person.belonging:
                obj, first, moved = person.belonging
                assert f"my {obj}" in said.lower() and first in said and moved in said
            if person.purchase:
                things, n, m, _ = person.purchase
                assert f"{NUMBERS[n]} {things}" in said and f"{NUMBERS[m]}" in said
            for fact in (person.town, person.likes, person.dislikes):
                assert fact is None or fact in said
            if person.plan:
                assert person.plan[1] in said


# ------------------------------------------------------------------------------------------------ asks
def test_every_world_asks_all_five_types_and_one_question_before_a_change():
    for world in worlds_2000()[:500]:
        assert 6 <= len(world.asks) <= 10
        assert {t for a in world.asks for t in a.types} == set(TYPES) == set(M3_TYPES)
        assert len({a.question for a in world.asks}) == len(world.asks)
        before = [a for a in world.asks if a.kind == BEFORE_CHANGE]
        assert len(before) == 1 and before[0].at is not None
        (early,) = before
        (later,) = [a for a in world.asks if a.subject == early.subject and a.at is None]
        assert early.answer != later.answer  # asked at the end, the same belonging is somewhere else
        move = next(line.scene for line in world.scenes if "move" in line.facts)
        assert world.before_clip(early) < clip_of(move) <= world.before_clip(later)
        assert early.at <= move * 15  # asked before the move is said
        assert all(a.at is None for a in world.asks if a is not early)


def test_a_question_of_two_hops_has_a_follow_up_naming_the_person_of_its_second_hop():
    hops = 0
    for world in worlds_2000()[:300]:
        names = {p.key: p.name for p in world.people}
        for ask in world.asks:
            later = {scene for scene, _ in ask.follow_ups}
            if not ask.kind.startswith("hop-") or len(ask.scenes) < 2 or not later < set(ask.scenes):
                assert not ask.follow_ups or ask.kind.startswith("hop-"), ask
                continue
            hops += 1
            assert ask.follow_ups, ask
            for scene, query in ask.follow_ups:
                named = names[world.scenes[scene].speaker]
                assert named in query and named not in ask.question and query.endswith("?"), (ask, query)
                assert words(query) - words(named) <= words(ask.question) | frame_words(), (ask, query)
    assert hops > 300


def _key_words(answer: str) -> set[str]:
    return words(answer) - {"he", "she"}


@cache
def frame_words() -> frozenset[str]:
    """The words of the generator's phrasings (its sentence and question templates), which say no fact."""
    texts = _strings(ROOT / "m3agent" / "train" / "worlds.py")
    return frozenset().union(*(words(re.sub(r"\{[^}]*\}", " ", t)) for t in texts))


def facts(text: str) -> set[str]:
    return words(text) - frame_words()


def seen_text(world: World, scene: int) -> str:
    """What a scene says and shows in writing (not the noise), as one text."""
    shown = [s.text.replace("\n", ". ") for s in world.shown_in(scene) if not s.noise]
    return " ".join([world.scenes[scene].text, *shown]).strip()


@pytest.mark.parametrize("chunk", range(4))
def test_evidence_holds_each_answer_and_is_seen_in_time(chunk):
    for world in worlds_2000()[chunk * 100 : chunk * 100 + 100]:
        names = {p.name: p for p in world.people}
        intro = {p.key: next(line.scene for line in world.scenes if line.speaker == p.key) for p in world.people}
        for ask in world.asks:
            lines = [Line(s, world.scenes[s].speaker, seen_text(world, s)) for s in ask.scenes]
            assert ask.scenes and all(line.text for line in lines), ask  # evidence: scenes that say or show it
            assert max(clip_of(s) for s in ask.scenes) <= world.before_clip(ask)  # seen by the time it is asked
            text = " ".join(line.text for line in lines)
            numbers = [NUMBERS.index(w) for w in re.findall(r"[a-z]+", text.lower()) if w in NUMBERS]
            answer = ask.answer.rstrip(".").lower()
            if answer in NUMBERS:  # a total: the numbers said add up to it, as its working says
                assert sum(numbers) == NUMBERS.index(answer), ask
                terms = re.fullmatch(r"(\d+) \+ (\d+) = (\d+) .+\.", ask.worked)
                assert terms and sorted(numbers) == sorted(map(int, terms.groups()[:2])), ask
                assert int(terms[3]) == sum(numbers) and ask.worked.split(" = ")[1].split(" ", 1)[1][:-1] in ask.question
            else:
                assert _key_words(ask.answer) <= words(text) and not ask.worked, ask
            for name in re.findall(r"\b[A-Z][a-z]+\b", ask.question + " " + ask.answer):
                if name in names:  # a person named in the question or the answer: read in a line, or linked to
                    person = names[name]  # their voice by their introduction
                    assert intro[person.key] in ask.scenes or any(
                        name in line.text for line in lines if line.speaker != person.key), (ask, name)
            asked = facts(ask.question) | facts(ask.answer)
            for line in lines:  # each scene of evidence is needed: it shares a fact with the ask or another scene
                others = set().union(*(facts(o.text) for o in lines if o is not line)) if len(lines) > 1 else set()
                speakers = {o.speaker for o in lines if o is not line}
                assert facts(line.text) & (asked | others) or line.speaker in speakers, (ask, line)


@pytest.mark.parametrize("chunk", range(4))
def test_asks_are_answerable_only_from_their_evidence(chunk):
    """No scene outside an ask's evidence that it may see says its answer, and before a change nothing it may see
    says where the belonging went."""
    for world in worlds_2000()[chunk * 100 : chunk * 100 + 100]:
        for ask in world.asks:
            seen = [Line(line.scene, line.speaker, seen_text(world, line.scene)) for line in world.scenes
                    if clip_of(line.scene) <= world.before_clip(ask)]
            answer = ask.answer.rstrip(".")
            phrase = re.sub(r"^(He|She) is an? |^(In|On|Under|Behind|At) ", "", answer)
            if ask.kind == BEFORE_CHANGE:
                owner = next(p for p in world.people if p.belonging and ask.subject == f"object:{p.belonging[0]}")
                moved = owner.belonging[2].split(" ", 1)[1]
                assert not any(moved in line.text for line in seen), ask
            if answer.lower() in NUMBERS or answer in {p.name for p in world.people}:
                continue  # a total is said nowhere; a name is also said where others mention the person
            holders = {line.scene for line in seen if phrase.lower() in line.text.lower()}
            assert holders and holders <= set(ask.scenes), (ask, holders)


# ------------------------------------------------------------------------------------------------ no leak
def test_no_training_question_or_fact_appears_in_evaluation():
    evaluation = [normal(t) for t in evaluation_texts()]
    haystack = "\n".join(evaluation)
    evaluation_sentences = {normal(s) for t in evaluation_texts() for s in sentences(t)}
    questions, facts = set(), set()
    for world in worlds_2000():
        questions.update(normal(q) for a in world.asks for q in (a.question, *(f for _, f in a.follow_ups)))
        facts.update(normal(s) for line in world.scenes for s in sentences(line.text))
        facts.update(normal(row) for shown in world.shown if not shown.noise for row in shown.text.split("\n"))
    assert len(facts) > 5_000 and len(questions) > 5_000
    assert not (questions | facts) & evaluation_sentences
    assert not [t for t in questions | facts if t in haystack]  # not even inside an evaluation line


def test_word_lists_share_no_name_or_content_word_with_evaluation():
    forbidden = set().union(*(words(t) for t in evaluation_texts()))
    assert {"david", "sarah", "peter", "toronto", "key", "bowl", "nurse", "apple", "umbrella"} <= forbidden
    lists = word_lists()
    for name, items in lists.items():
        shared = {item: words(item) & forbidden for item in items if words(item) & forbidden}
        assert not shared, f"{name}: {shared}"
    names = {w.lower() for w in vocab.MEN + vocab.WOMEN}
    assert not names & forbidden


def word_lists() -> dict[str, list[str]]:
    return {"men": list(vocab.MEN), "women": list(vocab.WOMEN), "jobs": list(vocab.JOBS),
            "workplaces": [w for ws in vocab.JOBS.values() for w in ws], "towns": list(vocab.TOWNS),
            "objects": list(vocab.OBJECTS), "places": [p for _, p in vocab.PLACES],
            "countables": list(vocab.COUNTABLES), "shops": list(vocab.SHOPS), "plans": list(vocab.PLANS),
            "preferences": list(vocab.PREFERENCES), "relations": [r for pair in vocab.RELATIONS for r in pair],
            "advice": [part for pair in vocab.ADVICE for part in pair], "signs": list(vocab.SIGNS),
            "counters": list(vocab.COUNTERS), "facilities": list(vocab.FACILITIES), "events": list(vocab.EVENTS)}


def test_word_lists_are_large_distinct_and_places_stand_apart():
    lists = word_lists()
    for name, items in lists.items():
        assert len(items) == len(set(items)), name
    assert len(vocab.MEN) >= 50 and len(vocab.WOMEN) >= 50 and len(vocab.JOBS) >= 40 and len(vocab.TOWNS) >= 50
    assert min(len(lists[k]) for k in ("objects", "places", "countables", "plans", "preferences")) >= 35
    assert len(vocab.ADVICE) >= 35
    assert not {w.lower() for w in vocab.MEN} & {w.lower() for w in vocab.WOMEN}
    place_words = set().union(*(words(p) for p in lists["places"]))
    others = set().union(*(words(i) for k, items in lists.items() if k != "places" for i in items))
    assert not place_words & others  # where a belonging is can only be read from where it was put or moved


# ------------------------------------------------------------------------------------------------ on-screen text
def test_worlds_show_text_nobody_says_and_ask_about_each():
    """Signs, slides, notices and captions are shown in many worlds, each asked about once, its answer read off
    the screen and said by nobody; noise (a channel mark, a misread fragment) is never asked about."""
    kinds, noise = Counter(), 0
    for world in worlds_2000()[:500]:
        asked = {a.subject: a for a in world.asks if a.kind.startswith("text-")}
        said = " ".join(line.text for line in world.scenes).lower()
        for shown in world.shown:
            if shown.noise:
                noise += 1
                assert f"text:{shown.scene}" not in asked or any(not s.noise for s in world.shown_in(shown.scene))
                continue
            ask = asked[f"text:{shown.scene}"]
            kinds[ask.kind] += 1
            answer = ask.answer.rstrip(".").removeprefix("At ")
            assert answer.lower() in shown.text.lower() and answer.lower() not in said, (ask, shown)
            assert shown.scene in ask.scenes and max(ask.scenes) // 2 <= world.before_clip(ask)
    assert set(kinds) == {"text-sign", "text-time", "text-notice", "text-notice-hop", "text-caption"}
    assert min(kinds.values()) >= 20 and noise >= 50
    assert sum(bool(w.shown) for w in worlds_2000()[:500]) >= 300
