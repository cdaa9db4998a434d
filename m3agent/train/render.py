"""Synthetic worlds (:mod:`m3agent.train.worlds`) in the shapes the rest of the package reads.

* :func:`annotations`: M3-Bench's robot annotation file, exactly as the mini M3-Bench writes its own
  (``bench/m3mini/build.py``): every question has a ``timestamp`` (its ``at``, else the end of the video) and
  ``before_clip = floor(seconds / 30) - 1``; ``reasoning`` quotes the scenes of evidence.
* :func:`evidence`: the ``NAME.evidence.json`` sidecar, ``{question_id: [clip, ...]}``.
* :func:`worked`: the ``NAME.worked.json`` sidecar, ``{question_id: answer with its working}``.
* :func:`follow_ups`: the ``NAME.queries.json`` sidecar, ``{question_id: {clip: query}}``: what a reader searches
  for the second hop of a question once the first is found.
* :func:`records`: the world as a text memory (:class:`~m3agent.memory.text_sources.TextRecord`), one record a
  spoken scene, its session the 30-second clip it falls in, so a text memory's clips are the video's. Each line
  is written by the default memorizer's own functions for a speaker's scene (``<character_2> is on screen from
  02:15 to 02:29.``, ``At 02:15 <character_2> says: "..."``), plus ``<character_2>'s name is Olga`` where a line
  gives a name the memorizer reads, so the control model learns on text what it reads in a video's memory. A video
  memory knows no names until someone says one, so speakers are ids (numbered in the order people first speak,
  from a per-world start) and names come from the lines. What a scene shows in writing is written as the video
  memorizer writes OCR (``The text "GATE 14" is on screen from 01:30 to 01:44.``, a slide a line per row), a
  mark on screen all along once, with its whole span, and each cut inside a clip as ``The scene changes at ...``.
* :func:`scenes`: the world as :class:`~m3agent.samples.synth.Scene` s for
  :func:`~m3agent.samples.synth.build_episode`: each person's photo on screen while their espeak-ng voice
  says their line, with the scene's text drawn on (:func:`m3agent.samples.screen_text.picture`), every scene
  exactly 15 s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from m3agent.media.clock import clock
from m3agent.memory.text_sources import TextRecord
from m3agent.samples.synth import Scene
from m3agent.train.worlds import CLIP_SECONDS, SCENE_SECONDS, Ask, World, clip_of, scene_start

#: voice key (:data:`m3agent.train.worlds.VOICE_KEYS`) -> espeak-ng voice: the mini M3-Bench's three, and more
VOICES = {"man_us": "en-us+m3", "man_gb": "en-gb-x-rp+m7", "man_scot": "en-gb-scotland+m1",
          "woman_1": "en+f4", "woman_2": "en-us+f2", "woman_3": "en-gb+f3"}


def question_id(world: World, number: int) -> str:
    return f"{world.id}_Q{number:02d}"


def annotations(worlds: Iterable[World], heard: Mapping[str, Mapping[int, str]] | None = None) -> dict:
    """``{world id: {video_path, mem_path, qa_list}}``: M3-Bench's robot schema, one video a world. ``heard``:
    ``{world id: its lines as heard}``; a question about a heard world whose answer the hearing lost
    (:func:`answer_heard`) is left out: its gold reply would teach the model to answer what its notes do not hold."""
    heard = heard or {}
    out = {}
    for world in worlds:
        qa_list = []
        for number, ask in kept_asks(world, heard.get(world.id)):
            at = world.asked_at(ask)
            lines = "; ".join(_evidence_text(world, s) for s in ask.scenes)
            qa_list.append({"question": ask.question, "answer": ask.answer, "question_id": question_id(world, number),
                            "reasoning": f"The answer follows from {lines}.", "timestamp": clock(at),
                            "type": list(ask.types), "before_clip": int(at // CLIP_SECONDS) - 1})
        out[world.id] = {"video_path": f"videos/{world.id}.mp4", "mem_path": f"memories/{world.id}.db",
                         "qa_list": qa_list}
    return out


def kept_asks(world: World, heard: Mapping[int, str] | None = None) -> list[tuple[int, Ask]]:
    """``world``'s questions with their numbers (from 1) that its annotations keep: all of them, or with its lines
    ``heard``, those whose answer the hearing did not lose (:func:`answer_heard`)."""
    return [(number, ask) for number, ask in enumerate(world.asks, 1)
            if heard is None or answer_heard(world, ask, heard)]


def _evidence_text(world: World, scene: int) -> str:
    """A scene of evidence as the annotation's reasoning quotes it: what is said, and what is shown in writing."""
    shown = " / ".join(s.text.replace("\n", " / ") for s in world.shown_in(scene) if not s.noise)
    return f"scene {scene} at {clock(scene_start(scene))}: \"{world.scenes[scene].text}\"" + (
        f" (on screen: \"{shown}\")" if shown else "")


def answer_heard(world: World, ask: Ask, heard: Mapping[int, str]) -> bool:
    """Whether each spoken line of ``ask``'s evidence, as heard, still holds its part of the answer: of the answer's
    words (its working's, for a total) that the line says, at least half heard, and every number."""
    from m3agent.eval.judge import normalized_tokens

    answer = set(normalized_tokens(ask.worked or ask.answer))
    lines = {line.scene: line for line in world.scenes}
    for scene in ask.scenes:
        if not lines[scene].speaker:
            continue
        said = answer & set(normalized_tokens(lines[scene].text))
        kept = said & set(normalized_tokens(heard.get(scene, "")))
        if 2 * len(kept) < len(said) or any(word.isdigit() and word not in kept for word in said):
            return False
    return True


def evidence(worlds: Iterable[World]) -> dict[str, list[int]]:
    """``{question_id: [clip, ...]}``: the clips holding each answer's evidence."""
    return {question_id(world, number): sorted({clip_of(s) for s in ask.scenes})
            for world in worlds for number, ask in enumerate(world.asks, 1)}


def worked(worlds: Iterable[World]) -> dict[str, str]:
    """``{question_id: answer with its working}`` for the questions that have one (a total: "4 + 3 = 7 plates.");
    the gold replies of a warm start answer with it, the judge still holds the reference."""
    return {question_id(world, number): ask.worked
            for world in worlds for number, ask in enumerate(world.asks, 1) if ask.worked}


def follow_ups(worlds: Iterable[World]) -> dict[str, dict[str, str]]:
    """``{question_id: {clip: query}}``: for a question of two hops, what finds each clip of the second hop once the
    first is shown (:attr:`Ask.follow_ups`); a clip that also holds the first hop needs none. The gold replies of a
    warm start search it (:func:`m3agent.train.gold.gold_reply`)."""
    out = {}
    for world in worlds:
        for number, ask in enumerate(world.asks, 1):
            later = {scene for scene, _ in ask.follow_ups}
            first = {clip_of(scene) for scene in ask.scenes if scene not in later}
            queries = {str(clip_of(scene)): query for scene, query in ask.follow_ups if clip_of(scene) not in first}
            if queries:
                out[question_id(world, number)] = queries
    return out


def speaker_labels(world: World) -> dict[str, str]:
    """Person key -> ``<character_N>``, numbered in the order people first speak, from a start that varies with
    the world (a video's ids are whatever its memorizer gave)."""
    order = list(dict.fromkeys(line.speaker for line in world.scenes if line.speaker))
    return {key: f"<character_{n}>" for n, key in enumerate(order, world.index % 5)}


def records(world: World, heard: Mapping[int, str] | None = None) -> list[TextRecord]:
    """Each scene as the memorizer writes it, in the session of its 30-second clip: the speaker on screen
    (``<character_N> is on screen from MM:SS to MM:SS.``), a cut inside the clip, each row of text shown, the line
    (``At MM:SS <character_N> says: "line"``) and one record a name the line gives; a mark once, in the last clip.
    ``heard`` (:func:`m3agent.train.hearing.heard_lines`): the lines as speech recognition heard them, names read
    from those; a scene missing from it has no speech line, as in a video's memory."""
    from m3agent.memorize.grounded import person_on_screen_line, speech_line, stated_names
    from m3agent.memorize.on_screen import scene_change_line, screen_text_line

    labels = speaker_labels(world)
    out = []
    for line in world.scenes:
        rid, session = f"{world.id}/scene-{line.scene:02d}", str(clip_of(line.scene))
        start = scene_start(line.scene)
        if line.speaker:
            who = labels[line.speaker]
            out.append(TextRecord(f"{rid}/screen", person_on_screen_line(who, start, start + SCENE_SECONDS - 1),
                                  session=session))
        if start % CLIP_SECONDS:
            out.append(TextRecord(f"{rid}/cut", scene_change_line(start), session=session))
        for n, shown in enumerate(s for s in world.shown_in(line.scene) if s.where != "mark"):
            out.extend(TextRecord(f"{rid}/text-{n}-{k}", screen_text_line(row, start, start + SCENE_SECONDS - 1),
                                  session=session) for k, row in enumerate(shown.text.split("\n")))
        said = line.text if heard is None else heard.get(line.scene, "")
        if line.speaker and said:
            out.append(TextRecord(rid, speech_line(who, start, said), session=session))
            out.extend(TextRecord(f"{rid}/name-{n}", f"{who}'s name is {name}", session=session)
                       for n, name in enumerate(stated_names(said), 1))
    out.extend(TextRecord(f"{world.id}/mark-{n}", screen_text_line(mark.text, 0.0, world.duration - 1),
                          session=str(world.clips - 1)) for n, mark in enumerate(world.shown) if mark.where == "mark")
    if sorted({clip_of(line.scene) for line in world.scenes if line.speaker}) != list(range(world.clips)):  # a text memory numbers its clips by session
        raise ValueError(f"{world.id}: some 30-second clip has no spoken scene; its text memory would number "
                         "the clips after it differently from the video")
    return out


def scenes(world: World, photos: Sequence[str | Sequence[str]], pictures: str | Path | None = None) -> list[Scene]:
    """The world's scenes for :func:`~m3agent.samples.synth.build_episode`. ``photos``: one entry per
    identity, a photo or several photos of one person; a person is shown by ``photos[person.photo]`` (their
    photos in turn, scene by scene), or, when there are fewer identities than that, not at all (an off-screen
    voice over a plain background). A scene with text on screen is drawn into the folder ``pictures`` (needed
    then): the photo, or a white page, with the text on it."""
    from m3agent.samples.screen_text import Writing, with_writing

    identities = [[p] if isinstance(p, str) else list(p) for p in photos]
    seen: dict[str, int] = {}
    out = []
    for line in world.scenes:
        image, person = None, world.person(line.speaker) if line.speaker else None
        if person is not None:
            shown = identities[person.photo] if person.photo < len(identities) else []
            turn = seen.get(person.key, 0)
            seen[person.key] = turn + 1
            image = shown[turn % len(shown)] if shown else None
        writings = tuple(Writing(s.text, s.where) for s in world.shown_in(line.scene))
        image = with_writing(image, writings, pictures, f"scene-{line.scene:02d}.png")
        if person is None:
            out.append(Scene(None, image, None, "", min_seconds=SCENE_SECONDS))
        else:
            out.append(Scene(person.key, image, VOICES[person.voice], line.text, min_seconds=SCENE_SECONDS))
    return out
