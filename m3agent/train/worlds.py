"""Synthetic worlds: training tasks for the control model that cannot leak into evaluation.

A world is a short video script in the mini M3-Bench's shape (``bench/m3mini``): 3-4 people, each shown
by a photo while a voice says their line, 8-14 scenes of exactly :data:`SCENE_SECONDS`, so scene ``i``
spans ``[15 i, 15 i + 15)`` and 30-second clip ``k`` holds scenes ``2k`` and ``2k + 1``. Every person
introduces themself ("... my name is Oskar ...") and states facts in the first person: their job and
workplace, where they grew up, a relation to another person, what they love and hate, a plan, a belonging
put somewhere and later moved, things bought in two batches that add up, and general advice. Some scenes
are empty, never both scenes of one clip (a text memory numbers its clips by the sessions it is given).
Most worlds also show text that nobody says (:class:`Shown`): a numbered sign behind a speaker, a timetable or a
notice on a slide, a news caption, and as noise a channel mark over the whole video or a stray fragment misread.

Each world asks 6-10 questions covering all five M3-Bench types, with reference answers as short as the
benchmark's and the scenes holding their evidence, every shown text asked about ("... according to the text?",
the sign seen while someone speaks, the notice that says where a buyer collects their things), plus one asked
*before a change*: at a second ``at``
after a belonging was put away and before it was moved, whose answer is the old place (``before_clip``
hides the move), while the same belonging asked about at the end has the new place.

Words come from :mod:`m3agent.train.vocabulary` (disjoint from every evaluation set's), every fact kind has
several phrasings, and everything is drawn from ``random.Random(f"{seed}:{index}")``: a world depends on
``(seed, index)`` alone, never on the global random state or on other worlds.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from m3agent.config import DEFAULT_CLIP_SECONDS
from m3agent.train import vocabulary as vocab

SCENE_SECONDS = 15.0
CLIP_SECONDS = DEFAULT_CLIP_SECONDS  # a world's clips are the videos' clips
#: the longest line a scene may say: espeak-ng at 150 words a minute says 34 words in about 11 s, which with
#: the half second before and the second after speech fits a 15-second scene
MAX_LINE_WORDS = 34

ME, MH, CM, PU, GK = ("Multi-Evidence Reasoning", "Multi-Hop Reasoning", "Cross-Modal Reasoning",
                      "Person Understanding", "General Knowledge Extraction")
TYPES = (ME, MH, CM, PU, GK)
BEFORE_CHANGE = "before-change"  # the kind of the ask asked before a belonging moved

#: voice keys by gender (:data:`m3agent.train.render.VOICES` names the espeak-ng voice of each)
VOICE_KEYS = {"man": ("man_us", "man_gb", "man_scot"), "woman": ("woman_1", "woman_2", "woman_3")}
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
           "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
#: when a plan happens, as said in a line and in its question
WHEN = ("tomorrow", "this weekend", "on Thursday", "next month", "tonight", "on Wednesday", "next week")


@dataclass(frozen=True)
class Person:
    key: str  # "p1", "p2", ... in the order they first speak
    name: str
    gender: str  # "man" or "woman"
    job: str
    workplace: str
    voice: str  # a key of VOICE_KEYS[gender]
    photo: int  # which of the caller's photo identities shows this person (m3agent.train.render.scenes)
    town: str | None = None  # the facts below are None when the person never states them
    relation: tuple[str, str] | None = None  # (relation, the other person's key): "Hana is my cousin"
    likes: str | None = None
    dislikes: str | None = None
    plan: tuple[str, str] | None = None  # (when, what)
    belonging: tuple[str, str, str] | None = None  # (object, first place, place it was moved to)
    purchase: tuple[str, int, int, str] | None = None  # (things, first batch, second batch, shop)
    advice: tuple[str, str] | None = None  # (situation, what to do)

    @property
    def pronoun(self) -> str:
        return "He" if self.gender == "man" else "She"

    @property
    def possessive(self) -> str:
        return "his" if self.gender == "man" else "her"


@dataclass(frozen=True)
class Line:
    scene: int
    speaker: str | None  # a person's key; None: an empty scene, nobody speaks
    text: str
    facts: tuple[str, ...] = ()  # what the line states: "intro", "job", "town", "put", "move", ...


@dataclass(frozen=True)
class Shown:
    """Text on screen during a scene, never said: ``where`` as :class:`m3agent.samples.screen_text.Writing` draws
    it (``panel``, ``slide``: a title and lines, ``caption``, ``mark``). A ``mark`` stays on screen the whole video;
    a ``noise`` text is a fragment an OCR misreads, asked about by nothing."""

    scene: int
    text: str
    where: str
    noise: bool = False


@dataclass(frozen=True)
class Ask:
    """A question with its reference answer, its M3-Bench types and the scenes that hold its evidence.

    ``at``: the second of the video it is asked at (None: at the end). Asked at ``t``, it may see only the clips
    finished by then, ``before_clip = floor(t / 30) - 1`` (M3-Bench's robot rule, see
    :func:`m3agent.eval.annotations.before_clip_at`); its evidence always lies in those clips."""

    question: str
    answer: str
    types: tuple[str, ...]
    scenes: tuple[int, ...]
    at: int | None = None
    kind: str = ""  # what it asks: "job", "total", BEFORE_CHANGE, "location-now", "said-town", "hop-job", ...
    subject: str = ""  # what it is about ("object:brass compass"): the asks before and after a change share it
    worked: str = ""  # the answer with its working, for the gold replies of a warm start ("4 + 3 = 7 plates.")
    #: (scene, query): what a reader who found the other scenes searches for this one, the person named in place of
    #: the description ("What does Frederik do for a living?" once a line shows Frederik grew up in Krakow)
    follow_ups: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class World:
    id: str
    seed: int
    index: int
    people: tuple[Person, ...]
    scenes: tuple[Line, ...]
    asks: tuple[Ask, ...]
    shown: tuple[Shown, ...] = ()

    def shown_in(self, scene: int) -> list[Shown]:
        """What is written on screen in ``scene`` (a mark: in every scene)."""
        return [s for s in self.shown if s.scene == scene or s.where == "mark"]

    @property
    def duration(self) -> float:
        return SCENE_SECONDS * len(self.scenes)

    @property
    def clips(self) -> int:
        return math.ceil(self.duration / CLIP_SECONDS)

    def person(self, key: str) -> Person:
        return next(p for p in self.people if p.key == key)

    def asked_at(self, ask: Ask) -> float:
        """The second ``ask`` is asked at: its ``at``, else the end of the video."""
        return self.duration if ask.at is None else float(ask.at)

    def before_clip(self, ask: Ask) -> int:
        """The last clip ``ask`` may see."""
        return math.floor(self.asked_at(ask) / CLIP_SECONDS) - 1

    def to_dict(self) -> dict:
        return asdict(self)


def scene_start(scene: int) -> float:
    return scene * SCENE_SECONDS


def clip_of(scene: int) -> int:
    return int(scene * SCENE_SECONDS // CLIP_SECONDS)


def world_id(seed: int, index: int) -> str:
    return f"world-{seed}-{index:05d}"


def generate_worlds(count: int, seed: int) -> list[World]:
    """Worlds ``0 .. count - 1`` of ``seed``."""
    return [generate_world(seed, index) for index in range(count)]


def generate_world(seed: int, index: int) -> World:
    """World ``index`` of ``seed``: the same pair always gives the same world."""
    rng = random.Random(f"{seed}:{index}")
    for _ in range(500):  # a draw that cannot be laid out in its scenes is drawn again, from the same stream
        world = _Builder(rng, seed, index).build()
        if world is not None:
            return world
    raise RuntimeError(f"no layout found for world {index} of seed {seed}")  # pragma: no cover


# ------------------------------------------------------------------------------------------------ phrasing
def _a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _answer(text: str) -> str:
    return _cap(text.rstrip(".")) + "."


#: the prepositions places start with, longest first ("at the back of" before "at")
_PREPOSITIONS = sorted({p for p, _ in vocab.PLACES}, key=len, reverse=True)


def _np(place: str) -> str:
    """``in the cedar chest`` -> ``the cedar chest``; ``at the back of the garage`` -> ``the garage``."""
    for preposition in _PREPOSITIONS:
        if place.startswith(preposition + " "):
            return place[len(preposition) + 1:]
    raise ValueError(f"no known preposition starts {place!r}")


INTRO = ("Hello, my name is {name}.", "Hi there, I'm {name}.", "Hey everyone, my name's {name}.",
         "Nice to meet you all, I am {name}.", "Greetings, you can call me {name}.", "This is {name} speaking.",
         "Good day, my name is {name}.")
JOB = ("I work as {a_job} at {workplace}.", "I am {a_job} at {workplace}.",
       "I earn my living as {a_job} at {workplace}.", "These days I work at {workplace} as {a_job}.",
       "By trade I'm {a_job}, and I work at {workplace}.")
TOWN = ("I grew up in {town}.", "I was born and raised in {town}.", "My home town is {town}.",
        "Originally I come from {town}.")
RELATION = ("{other} is my {rel}.", "{other} and I are {rels}.", "By the way, {other} is my {rel}.",
            "I have known {other} for years; we are {rels}.")
LIKE = ("I love {x}.", "I really enjoy {x}.", "I am a big fan of {x}.", "Nothing makes me happier than {x}.")
DISLIKE = ("I hate {x}.", "I can't stand {x}.", "I really dislike {x}.", "Honestly, I cannot bear {x}.")
PLAN = ("{When} I will {plan}.", "I am going to {plan} {when}.", "{When}, I plan to {plan}.",
        "I have decided to {plan} {when}.")
PUT = ("I put my {obj} {place}.", "I left my {obj} {place}.", "My {obj} is {place} for now.",
       "I just placed my {obj} {place}.", "I keep my {obj} {place}.", "These days I store my {obj} {place}.")
MOVE = ("I took my {obj} from {old_np} and put it {new}.", "My {obj} is no longer {old}. Now it is {new}.",
        "I moved my {obj} away from {old_np}; it is {new} now.",
        "I decided to move my {obj}, so now it is {new} instead.")
BUY = ("I bought {n} {things} at {shop}.", "At {shop} I picked up {n} {things}.",
       "Earlier today I got {n} {things} at {shop}.")
BUY_MORE = ("I bought {m} more {things}.", "I went back and got {m} more {things}.",
            "Later I picked up another {m} {things}.")
#: on-screen text: (slide title, row source, questions about a row's time)
SCHEDULES = (("Ferry times", "towns", ("At what time does the ferry to {row} leave, according to the text?",
                                       "When does the ferry to {row} sail, according to the slide?")),
             ("Opening hours", "facilities", ("At what time does the {row} open, according to the text?",
                                              "When does the {row} open, according to the slide on screen?")),
             ("Coach timetable", "towns", ("When does the coach to {row} leave, according to the text?",
                                           "According to the timetable on screen, when is the coach to {row}?")))
#: (a notice's line, questions about where it sends people)
NOTICES = (("Collect {things} at {counter} {n}", ("Where can {things} be collected, according to the text?",
                                                  "According to the notice, where are {things} collected?")),
           ("Spare {things} are kept at {counter} {n}", ("Where are spare {things} kept, according to the text?",
                                                         "According to the notice, where are spare {things}?")),
           ("Pay for {things} at {counter} {n}", ("Where do you pay for {things}, according to the text?",
                                                  "According to the notice, where is the payment for {things}?")))
NOTICE_TITLES = ("Notice", "Information", "Please note", "Visitors")
#: a caption's "when", and the questions about what it announces
CAPTION_WHEN = ("at dawn", "after midnight", "at noon", "overnight", "at sunrise", "this weekend", "next week")
CAPTION_ASKS = ("According to the caption, what is coming {when}?", "What does the caption on screen announce {when}?",
                "What happens {when}, according to the caption?")
SIGN_ASKS = ("Which {label} does the text show when {name} {doing}?", "What {label} is shown on screen while {name} "
             "{doing}?", "According to the sign on screen, which {label} is {name} at when {pronoun} {doing}?")
#: a fact kind -> how a sign question says what its speaker is doing in that scene
DOING = {"intro": "introduces {self}", "job": "talks about work", "town": "says where {pronoun} grew up",
         "relation": "talks about {other}", "like": "says what {pronoun} loves", "dislike": "says what {pronoun} hates",
         "plan": "talks about {poss} plans", "put": "says where {pronoun} put the {obj}",
         "move": "says {pronoun} moved the {obj}", "buy": "says where {pronoun} bought {things}",
         "buy-more": "says {pronoun} bought more {things}", "advice": "gives advice"}
MARKS = ("TV4", "NEWS 24", "KANAL 2", "ZTV", "RADIO 5", "CH 12")  # a channel mark: noise
NOTICE_HOOKS = ("Where can {name} collect the {things} {pronoun} bought, according to the text?",
                "According to the notice, where should {name} collect {poss} {things}?")
ADVICE = ("When you {sit}, {act}.", "Here is a tip: when you {sit}, {act}.", "{Act} when you {sit}.",
          "A piece of advice: if you {sit}, {act}.")


def _ask(question: str, answer: str, types, scenes, kind: str, subject: str, at: int | None = None,
         worked: str = "", follow_ups=(), first=()) -> Ask:
    """``first``: the scenes of a question's first hop; a follow-up for one of them is dropped (a scene saying both
    hops is read at once)."""
    later = tuple((scene, query) for scene, query in follow_ups if scene not in first)
    return Ask(question, _answer(answer), tuple(types), tuple(sorted(set(scenes))), at, kind, subject, worked, later)


def _hop(phrasing: tuple[str, str], name: str, **fields) -> tuple[str, str]:
    """A question of two hops and its follow-up: ``phrasing`` is (template with ``{d}``, the description that
    stands for the person), and the follow-up asks the same with the person's ``name`` in the description's place."""
    template, described = phrasing
    return template.format(d=described.format(**fields), **fields), template.format(d=name, **fields)


def _sum_worked(n: int, m: int, things: str) -> str:
    """A total with its working in digits: the small base model adds "4 + 3 =" right far more often than it
    names the sum of "four" and "three" at once, and the judge reads "7" as "seven"."""
    return f"{n} + {m} = {n + m} {things}."


# ------------------------------------------------------------------------------------------------ building
#: a fact kind -> the Person attribute it states (drawn for everyone, kept for those who state it)
STATED = {"town": "town", "like": "likes", "dislike": "dislikes", "plan": "plan"}
#: what every world asks: the belonging before its move (Person Understanding) and after it, a total (Multi-
#: Evidence), "who said" (Cross-Modal), a hop (Multi-Hop) and advice (General Knowledge)
REQUIRED: tuple[Callable[[Ask], bool], ...] = (
    lambda a: a.kind == BEFORE_CHANGE,
    lambda a: a.kind == "location-now",
    lambda a: a.kind in ("total", "hop-total"),
    lambda a: a.types == (CM,),
    lambda a: MH in a.types and a.kind != "hop-total",
    lambda a: a.types == (GK,),
)
#: kinds asked once a world: one belonging and one purchase each, asked in the required asks
ONCE = frozenset((BEFORE_CHANGE, "location-now", "total", "hop-total"))

@dataclass
class _Fact:
    kind: str  # intro job town relation like dislike plan put move buy buy-more advice
    who: str
    scene: int = -1


@dataclass
class _Slot:
    scene: int
    speaker: str | None = None
    facts: list[_Fact] = field(default_factory=list)


class _Builder:
    """One attempt at a world: people drawn, facts laid out in scenes, lines phrased, questions asked."""

    def __init__(self, rng: random.Random, seed: int, index: int):
        self.rng, self.seed, self.index = rng, seed, index

    # -- people
    def _people(self, n: int) -> dict[str, dict]:
        rng = self.rng
        while True:
            genders = [rng.choice(("man", "woman")) for _ in range(n)]
            if max(genders.count("man"), genders.count("woman")) <= len(VOICE_KEYS["man"]):
                break
        men = iter(rng.sample(vocab.MEN, n))
        women = iter(rng.sample(vocab.WOMEN, n))
        voices = {g: iter(rng.sample(VOICE_KEYS[g], len(VOICE_KEYS[g]))) for g in VOICE_KEYS}
        jobs = rng.sample(sorted(vocab.JOBS), n)
        towns = rng.sample(vocab.TOWNS, n)
        prefs = rng.sample(vocab.PREFERENCES, 2 * n)
        plans = rng.sample(vocab.PLANS, n)
        photos = rng.sample(range(n), n)
        people = {}
        for i, gender in enumerate(genders):
            key = f"p{i + 1}"
            people[key] = {"key": key, "name": next(men if gender == "man" else women), "gender": gender,
                           "job": jobs[i], "workplace": rng.choice(vocab.JOBS[jobs[i]]),
                           "voice": next(voices[gender]), "photo": photos[i], "_town": towns[i],
                           "_likes": prefs[2 * i], "_dislikes": prefs[2 * i + 1],
                           "_plan": (rng.choice(WHEN), plans[i])}
        return people

    # -- layout
    def build(self) -> World | None:
        rng = self.rng
        n_people = rng.choice((3, 4))
        n_scenes = rng.choice((8, 10, 12, 14))
        people = self._people(n_people)
        keys = list(people)
        clips = n_scenes // 2
        n_empty = 1 if n_scenes <= 10 else rng.choice((1, 2))
        empty_clips = rng.sample(range(1, clips), n_empty)  # never clip 0 (the first intros), one per clip at most
        empties = {2 * c + rng.randint(0, 1) for c in empty_clips}
        slots = [_Slot(s) for s in range(n_scenes) if s not in empties]
        if len(slots) < n_people + 3:
            return None
        intro_scene = {}
        for key, slot in zip(keys, slots):  # the first n spoken scenes introduce the people in order
            slot.speaker = key
            slot.facts.append(_Fact("intro", key, slot.scene))
            intro_scene[key] = slot.scene
        self.slots, self.people, self.intro_scene = slots, people, intro_scene

        mover, buyer, adviser = (rng.choice(keys) for _ in range(3))
        last_clip = clip_of(slots[-1].scene)
        put = self._place(_Fact("put", mover), lambda s: clip_of(s.scene) < last_clip)
        if put is None:
            return None
        if self._place(_Fact("move", mover), lambda s: clip_of(s.scene) > clip_of(put.scene)) is None:
            return None
        buy = self._place(_Fact("buy", buyer), lambda s: s.scene < slots[-1].scene)
        if buy is None or self._place(_Fact("buy-more", buyer), lambda s: s.scene > buy.scene) is None:
            return None
        if self._place(_Fact("advice", adviser)) is None:
            return None
        for key in keys:  # the job: with the introduction when there is room, else in a later line
            first = next(s for s in slots if s.scene == intro_scene[key])
            if len(first.facts) < 2 and rng.random() < 0.7:
                first.facts.append(_Fact("job", key, first.scene))
            elif self._place(_Fact("job", key)) is None:
                return None
        optional = {key: [(kind, key) for kind in ("town", "like", "dislike", "plan")] for key in keys}
        a, b = rng.sample(keys, 2)
        optional[a].append(("relation", a))
        self.relation = (rng.choice(vocab.RELATIONS), a, b)
        for key in keys:
            rng.shuffle(optional[key])
        for slot in slots:  # every spoken scene says something
            if slot.speaker is None:
                ready = [k for k in keys if optional[k]]
                if not ready:
                    return None
                slot.speaker = rng.choice(ready)
            if len(slot.facts) == 0 or (len(slot.facts) == 1 and rng.random() < 0.35):
                if optional[slot.speaker]:
                    kind, who = optional[slot.speaker].pop()
                    slot.facts.append(_Fact(kind, who, slot.scene))
            if not slot.facts:
                return None
        if rng.random() < 0.3:  # a second piece of advice, in a line with room for it
            roomy = [s for s in slots if len(s.facts) < 2 and s.speaker != adviser]
            if roomy:
                slot = rng.choice(roomy)
                slot.facts.append(_Fact("advice", slot.speaker, slot.scene))
        return self._finish(n_scenes)

    def _place(self, fact: _Fact, ok: Callable[[_Slot], bool] = lambda slot: True) -> _Fact | None:
        """``fact`` into a random scene after its speaker's introduction, free or theirs with room."""
        fits = [s for s in self.slots if s.scene >= self.intro_scene[fact.who] and ok(s) and len(s.facts) < 2
                and s.speaker in (None, fact.who)]
        if not fits:
            return None
        slot = self.rng.choice(fits)
        slot.speaker = fact.who
        fact.scene = slot.scene
        slot.facts.append(fact)
        return fact

    # -- phrasing and asking
    def _finish(self, n_scenes: int) -> World | None:
        rng, people = self.rng, self.people
        facts = {(f.kind, f.who): f for slot in self.slots for f in slot.facts}
        advice = [f for f in facts.values() if f.kind == "advice"]
        tips = rng.sample(vocab.ADVICE, len(advice))
        objects, places = rng.sample(vocab.OBJECTS, 1), rng.sample(vocab.PLACES, 2)
        for f in facts.values():  # what each person states becomes their attribute
            p = people[f.who]
            if f.kind in STATED:
                p[STATED[f.kind]] = p["_" + STATED[f.kind]]
            elif f.kind == "relation":
                (rel, _), _, other = self.relation
                p["relation"] = (rel, other)
            elif f.kind == "put":
                first, moved = (" ".join(pl) for pl in places)
                p["belonging"] = (objects[0], first, moved)
            elif f.kind == "buy":
                p["purchase"] = (rng.choice(vocab.COUNTABLES), rng.randint(2, 6), rng.randint(2, 5),
                                 rng.choice(vocab.SHOPS))
            elif f.kind == "advice":
                p["advice"] = tips.pop()
        persons = tuple(Person(**{k: v for k, v in p.items() if not k.startswith("_")}) for p in people.values())
        self.persons = {p.key: p for p in persons}
        self.facts = facts
        lines, by_scene = [], {s.scene: s for s in self.slots}
        for scene in range(n_scenes):
            slot = by_scene.get(scene)
            if slot is None:
                lines.append(Line(scene, None, ""))
                continue
            order = sorted(slot.facts, key=lambda f: f.kind != "intro")
            text = " ".join(self._say(f) for f in order)
            if len(text.split()) > MAX_LINE_WORDS:
                return None
            lines.append(Line(scene, slot.speaker, text, tuple(f.kind for f in order)))
        self.lines = lines
        shown, text_asks = self._texts()
        asks = self._asks(text_asks)
        return World(world_id(self.seed, self.index), self.seed, self.index, persons, tuple(lines), tuple(asks),
                     tuple(shown))

    def _say(self, fact: _Fact) -> str:
        rng, p = self.rng, self.persons[fact.who]
        pick = rng.choice
        if fact.kind == "intro":
            return pick(INTRO).format(name=p.name)
        if fact.kind == "job":
            return pick(JOB).format(a_job=_a(p.job), workplace=p.workplace)
        if fact.kind == "town":
            return pick(TOWN).format(town=p.town)
        if fact.kind == "relation":
            rel, rels = next(r for r in vocab.RELATIONS if r[0] == p.relation[0])
            return _cap(pick(RELATION).format(other=self.persons[p.relation[1]].name, rel=rel, rels=rels))
        if fact.kind == "like":
            return pick(LIKE).format(x=p.likes)
        if fact.kind == "dislike":
            return pick(DISLIKE).format(x=p.dislikes)
        if fact.kind == "plan":
            when, plan = p.plan
            return _cap(pick(PLAN).format(When=_cap(when), when=when, plan=plan))
        obj, first, moved = p.belonging or ("", "", "")
        if fact.kind == "put":
            return pick(PUT).format(obj=obj, place=first)
        if fact.kind == "move":
            return pick(MOVE).format(obj=obj, old=first, old_np=_np(first), new=moved)
        if fact.kind in ("buy", "buy-more"):
            things, n, m, shop = p.purchase
            template = pick(BUY if fact.kind == "buy" else BUY_MORE)
            return template.format(n=NUMBERS[n], m=NUMBERS[m], things=things, shop=shop)
        sit, act = p.advice
        return pick(ADVICE).format(sit=sit, act=act, Act=_cap(act))

    def _texts(self) -> tuple[list[Shown], list[Ask]]:
        """The texts this world shows (none to three of a sign, a slide with times, a notice and a caption; slides
        on the empty scenes first), each asked about, plus noise an OCR would also read."""
        rng, persons, lines = self.rng, self.persons, self.lines
        spoken = [line.scene for line in lines if line.speaker]
        empty = [line.scene for line in lines if line.speaker is None]
        shown: list[Shown] = []
        asks: list[Ask] = []
        for kind in rng.sample(("sign", "schedule", "notice", "caption"), rng.choice((0, 1, 2, 2, 3))):
            used = {s.scene for s in shown}
            free = [s for s in (empty if kind in ("schedule", "notice") else []) + spoken if s not in used]
            scene = free[0] if free and free[0] in empty else rng.choice(free)
            subject = f"text:{scene}"
            if kind == "sign":
                label, number = rng.choice(vocab.SIGNS), rng.randint(2, 40)
                who = persons[lines[scene].speaker]
                question = rng.choice(SIGN_ASKS).format(label=label.lower(), name=who.name, pronoun=who.pronoun.lower(),
                                                        doing=self._doing(who, lines[scene].facts[-1]))
                shown.append(Shown(scene, f"{label} {number}".upper(), "panel"))
                asks.append(_ask(question, f"{label} {number}", (CM,), (self.intro_scene[who.key], scene),
                                 "text-sign", subject))
            elif kind == "schedule":
                title, source, questions = rng.choice(SCHEDULES)
                stated = {p.town for p in persons.values()}
                rows = rng.sample([r for r in (vocab.TOWNS if source == "towns" else vocab.FACILITIES)
                                   if r not in stated], rng.randint(2, 3))
                times = sorted(rng.sample([f"{h:02d}:{m:02d}" for h in range(6, 23) for m in range(0, 60, 5)], len(rows)))
                shown.append(Shown(scene, "\n".join([title] + [f"{_cap(r)} {t}" for r, t in zip(rows, times)]),
                                   "slide"))
                row = rng.randrange(len(rows))
                asks.append(_ask(rng.choice(questions).format(row=rows[row]), times[row], (CM,), (scene,),
                                 "text-time", subject))
            elif kind == "notice":
                asks.append(self._notice(scene, shown))
            else:
                event, when = rng.choice(vocab.EVENTS), rng.choice(CAPTION_WHEN)
                shown.append(Shown(scene, f"{event} {when}", "caption"))
                asks.append(_ask(rng.choice(CAPTION_ASKS).format(when=when), event, (CM,), (scene,), "text-caption",
                                 subject))
        if rng.random() < 0.25:
            shown.append(Shown(0, rng.choice(MARKS), "mark", noise=True))
        if rng.random() < 0.2:
            fragment = "".join(rng.choice("BCDFGHJKLMNPQRSTVWXZ") for _ in range(rng.randint(2, 3)))
            shown.append(Shown(rng.choice(spoken), fragment, "panel", noise=True))
        return shown, asks

    def _notice(self, scene: int, shown: list[Shown]) -> Ask:
        """A notice saying where to collect, find or pay for things; when someone bought things, often theirs,
        asked as where *they* collect them (a hop from the purchase to the notice)."""
        rng = self.rng
        buyer = next(p for p in self.persons.values() if p.purchase)
        (template, questions), counter, number = rng.choice(NOTICES), rng.choice(vocab.COUNTERS), rng.randint(2, 30)
        hooked = template == NOTICES[0][0] and rng.random() < 0.6
        things = buyer.purchase[0] if hooked else rng.choice([c for c in vocab.COUNTABLES if c != buyer.purchase[0]])
        shown.append(Shown(scene, f"{rng.choice(NOTICE_TITLES)}\n{template.format(things=things, counter=counter, n=number)}",
                           "slide"))
        answer = f"at {counter} {number}"
        if not hooked:
            return _ask(rng.choice(questions).format(things=things), answer, (CM,), (scene,), "text-notice",
                        f"text:{scene}")
        question = rng.choice(NOTICE_HOOKS).format(name=buyer.name, things=things, pronoun=buyer.pronoun.lower(),
                                                   poss=buyer.possessive)
        return _ask(question, answer, (MH,), (self.intro_scene[buyer.key], self._scene("buy", buyer.key), scene),
                    "text-notice-hop", f"text:{scene}")

    def _doing(self, who: Person, fact: str) -> str:
        """What ``who`` is doing in the scene whose last fact is ``fact`` ("says where she put the trowel")."""
        obj = who.belonging[0] if who.belonging else ""
        things = who.purchase[0] if who.purchase else ""
        other = self.persons[who.relation[1]].name if who.relation else ""
        man = who.gender == "man"
        return DOING[fact].format(self="himself" if man else "herself", pronoun=who.pronoun.lower(),
                                  poss=who.possessive, other=other, obj=obj, things=things)

    def _scene(self, kind: str, who: str) -> int:
        return self.facts[(kind, who)].scene

    def _asks(self, text_asks: list[Ask]) -> list[Ask]:
        """The six asks every world has (the five types, and the same belonging before and after its move),
        one a shown text, then more of the other candidates (ten asks at most), in a seeded order."""
        rng = self.rng
        pool = self._candidates()
        chosen = [rng.choice([a for a in pool if need(a)]) for need in REQUIRED]
        rest = [a for a in pool if a.kind not in ONCE and (a.kind, a.subject) not in {(c.kind, c.subject)
                                                                                      for c in chosen}]
        rng.shuffle(rest)
        asks = chosen + text_asks + rest[: rng.randint(0, max(0, 4 - len(text_asks)))]
        rng.shuffle(asks)
        return asks

    def _candidates(self) -> list[Ask]:
        """Every question this world can answer, each with its evidence scenes."""
        rng, persons = self.rng, self.persons
        pick = rng.choice
        out: list[Ask] = []
        intro = self.intro_scene

        def ask(*args, **kwargs):
            out.append(_ask(*args, **kwargs))

        for p in persons.values():
            name, job_scene, k = p.name, self._scene("job", p.key), p.key
            job_answer = f"{p.pronoun} is {_a(p.job)}"
            ask(pick(("What is {n}'s job?", "What does {n} do for a living?", "What is {n}'s profession?"))
                .format(n=name), job_answer, (PU,), (intro[k], job_scene), "job", k)
            ask(pick(("Where does {n} work?", "At which place does {n} work?")).format(n=name),
                f"at {p.workplace}", (PU,), (intro[k], job_scene), "workplace", k)
            if p.town:
                town = self._scene("town", k)
                question, answer = pick(((f"Where did {name} grow up?", f"in {p.town}"),
                                         (f"Which town does {name} come from?", p.town)))
                ask(question, answer, (PU,), (intro[k], town), "town", k)
                ask(pick(("Who said that they grew up in {t}?", "Which person comes from {t}?")).format(t=p.town),
                    name, (CM,), (intro[k], town), "said-town", k)
                question, follow = _hop(pick((("What does {d} do for a living?", "the person who grew up in {t}"),
                                              ("What is the job of {d}?", "the person who comes from {t}"))),
                                        name, t=p.town)
                ask(question, job_answer, (MH,) if rng.random() < 0.6 else (MH, PU), (town, job_scene),
                    "hop-job-town", k, follow_ups=[(job_scene, follow)], first=[town])
                question, follow = _hop(pick((("Where did {d} grow up?", "the {j}"), ("Which town is {d} from?",
                                                                                     "the {j}"))), name, j=p.job)
                ask(question, f"in {p.town}", (MH,), (job_scene, town), "hop-town-job", k, follow_ups=[(town, follow)],
                    first=[job_scene])
            if p.likes:
                like = self._scene("like", k)
                ask(pick(("What does {n} love?", "What does {n} enjoy?", "What is {n} a big fan of?"))
                    .format(n=name), p.likes, (PU,), (intro[k], like), "like", k)
                ask(pick(("Who said that they love {x}?", "Which person is a fan of {x}?")).format(x=p.likes),
                    name, (CM,), (intro[k], like), "said-like", k)
                question, follow = _hop(pick((("Where does {d} work?", "the person who loves {x}"),
                                              ("At which place does {d} work?", "the fan of {x}"))), name, x=p.likes)
                ask(question, f"at {p.workplace}", (MH,), (like, job_scene), "hop-work-like", k,
                    follow_ups=[(job_scene, follow)], first=[like])
            if p.dislikes:
                dislike = self._scene("dislike", k)
                ask(pick(("What does {n} hate?", "What can't {n} stand?", "What does {n} dislike?")).format(n=name),
                    p.dislikes, (PU,), (intro[k], dislike), "dislike", k)
                ask(pick(("Who said that they hate {x}?", "Who said they can't stand {x}?")).format(x=p.dislikes),
                    name, (CM,), (intro[k], dislike), "said-dislike", k)
            if p.plan:
                when, plan = p.plan
                scene = self._scene("plan", k)
                ask(pick(("What is {n} going to do {w}?", "What does {n} plan to do {w}?", "What will {n} do {w}?"))
                    .format(n=name, w=when), plan, (PU,), (intro[k], scene), "plan", k)
                ask(f"Who said they would {plan} {when}?", name, (CM,), (intro[k], scene), "said-plan", k)
                question, follow = _hop(pick((("What is {d} going to do {w}?", "the {j}"),
                                              ("What does {d} plan to do {w}?", "the {j}"))), name, j=p.job, w=when)
                ask(question, plan, (MH,), (job_scene, scene), "hop-plan-job", k, follow_ups=[(scene, follow)],
                    first=[job_scene])
            if p.relation:
                rel, other_key = p.relation
                other = persons[other_key]
                scene = self._scene("relation", k)
                ask(f"Who is {name}'s {rel}?", other.name, (PU,), (intro[k], scene), "relation", k)
                ask(f"Who said that {other.name} is their {rel}?", name, (CM,), (intro[k], scene), "said-relation", k)
                question, follow = _hop(pick((("Where does {d} work?", "{n}'s {r}"),
                                              ("At which place does {d} work?", "{n}'s {r}"))), other.name, n=name, r=rel)
                their_job = self._scene("job", other_key)
                ask(question, f"at {other.workplace}", (MH,), (intro[k], scene, intro[other_key], their_job),
                    "hop-work-relation", k, follow_ups=[(intro[other_key], follow), (their_job, follow)],
                    first=[intro[k], scene])
            if p.belonging:
                obj, first, moved = p.belonging
                put, move = self._scene("put", k), self._scene("move", k)
                subject = f"object:{obj}"
                named = rng.random() < 0.4
                before, now = pick((("Where is the {o}?", "Where is the {o} now?"),
                                    ("Where can the {o} be found?", "Where can the {o} be found now?"),
                                    ("Where is {n}'s {o}?", "Where is {n}'s {o} now?"),
                                    ("Where does {n} keep {p} {o}?", "Where does {n} keep {p} {o} now?"),
                                    ("Where did {n} put {p} {o}?", "Where has {n} put {p} {o} now?")) if named else
                                   (("Where is the {o}?", "Where is the {o} now?"),
                                    ("Where can the {o} be found?", "Where can the {o} be found now?")))
                named = "{n}" in before
                extra = (intro[k],) if named else ()
                earliest = (clip_of(max((put, *extra))) + 1) * int(CLIP_SECONDS)
                at = rng.randint(earliest, int(scene_start(move)))
                ask(before.format(o=obj, n=name, p=p.possessive), first, (PU,), (put, *extra), BEFORE_CHANGE, subject, at=at)
                ask(now.format(o=obj, n=name, p=p.possessive), moved, (ME,), (put, move, *extra), "location-now", subject)
                ask(pick(("Who moved the {o}?", "Who said they moved the {o}?")).format(o=obj), name, (CM,),
                    (intro[k], move), "said-move", k)
                question, follow = _hop(pick((("What is the job of {d}?", "the person who moved the {o}"),
                                              ("What does {d} do for a living?", "the person who moved the {o}"))),
                                        name, o=obj)
                ask(question, job_answer, (MH,) if rng.random() < 0.6 else (MH, PU), (move, job_scene), "hop-job-move",
                    k, follow_ups=[(job_scene, follow)], first=[move])
            if p.purchase:
                things, n, m, shop = p.purchase
                buy, more = self._scene("buy", k), self._scene("buy-more", k)
                subject = f"count:{things}"
                ask(pick(("How many {t} did {n} buy in total?", "In total, how many {t} did {n} get?",
                          "How many {t} did {n} buy altogether?")).format(t=things, n=name),
                    NUMBERS[n + m], (ME,), (intro[k], buy, more), "total", subject,
                    worked=_sum_worked(n, m, things))
                question, follow = _hop(pick((("How many {t} did {d} buy in total?", "the {j}"),
                                              ("Altogether, how many {t} did {d} get?", "the {j}"))),
                                        name, t=things, j=p.job)
                ask(question, NUMBERS[n + m], (ME, MH), (job_scene, buy, more), "hop-total", subject,
                    worked=_sum_worked(n, m, things), follow_ups=[(buy, follow), (more, follow)], first=[job_scene])
                ask(f"Who bought {things} at {shop}?", name, (CM,), (intro[k], buy), "said-buy", k)
            if p.advice:
                sit, act = p.advice
                scene = self._scene("advice", k)
                ask(pick(("What should you do when you {s}, according to the video?",
                          "According to the video, what is the advice for when you {s}?",
                          "What tip does the video give for when you {s}?")).format(s=sit),
                    act, (GK,), (scene,), "advice", f"advice:{sit}")
                ask(f"Who gave advice for when you {sit}?", name, (CM,), (intro[k], scene), "said-advice", k)
        return out
