"""Identity fixtures that are hard on purpose: how many people end up in one node (a merge, the costly error) and
how many nodes a person gets (a split), per fixture, with the full embedded stack.

Usage: ``python -m bench.perf_identity [--only NAME ...] [--write docs/BENCHMARKS.md]``

Every fixture is built from the repository's own data (photos in ``tests/data/faces``, espeak-ng voices,
recorded speech in ``tests/data/speech``):

* ``alike-voices``: three people each speaking under their own photo; the two men's voices (espeak en-us and en-gb)
  sound closer than the voice embedder's threshold.
* ``two-on-screen``: two people in one photo take turns talking, so no clip ties a voice to a face.
* ``off-screen``: a narrator is heard over an empty screen between two people's scenes.
* ``two-photos``: one person shown in two different photos, speaking in both.
* ``librispeech-mix``: four real people (LibriSpeech test-other readers from ``tests/data/speech``: two women,
  1688 and 1998, and two men, 2414 and 2609, judged by their voices' median pitch, about 190, 195, 120 and 115 Hz)
  and two espeak voices (one male, one female), each under their own photo; the real readers speak in three
  scenes, the espeak voices in two, in turns. The repository has no LibriSpeech transcript file: each recording's
  scene text is its transcript from the bundled Whisper, mis-hearings corrected by hand (only who speaks when is
  scored).

A voice node's people are those speaking at its segments' times; a face node's, those whose scene its "on screen"
lines cover (not scored in ``two-on-screen``, where two faces share every scene). ``characters --check`` problems
are counted too.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FACES = ROOT / "tests" / "data" / "faces"
LIBRISPEECH = ROOT / "tests" / "data" / "speech" / "librispeech_test-other"

# (person, photo, LibriSpeech speaker, [(utterance, its words), ...]): two women and two men, so that each real
# voice has a real voice of the same gender beside it
READERS = [
    ("reader-1688", "train_rose_leslie_img1.jpg", "1688", [
        ("1688-142285-0003", "I really liked that account of himself better than anything else he said."),
        ("1688-142285-0006", "I don't think, Mister Hale, you have done quite right in introducing such a person to "
                             "us without telling us what he had been."),
        ("1688-142285-0007", "I really was very much afraid of showing him how much shocked I was at some parts of "
                             "what he said.")]),
    ("reader-2414", "obama.jpg", "2414", [
        ("2414-128291-0001", "He asked himself: something warm and living quickeneth me, it must be in the "
                             "neighbourhood."),
        ("2414-128291-0004", "Answered he, the same that thou seekest, thou mischief-maker, that is to say, happiness "
                             "upon earth."),
        ("2414-128291-0007", "Who hath not at present his heart, his mouth and his eyes full of disgust?")]),
    ("reader-1998", "lin-manuel-miranda.png", "1998", [
        ("1998-15444-0001", "He should make inquiries as to symptoms and time at which food or medicine was last "
                            "taken."),
        ("1998-15444-0003", "In making a post-mortem examination, the alimentary canal should be removed and "
                            "preserved for further investigation."),
        ("1998-15444-0006", "In a case of attempted suicide by poisoning, is it the duty of the doctor to inform the "
                            "police?")]),
    ("reader-2609", "biden.jpg", "2609", [
        ("2609-156975-0000", "Then Moses was afraid and said, surely the thing is known."),
        ("2609-156975-0005", "The absence of detailed reference to the Hebrews is therefore perfectly natural."),
        ("2609-156975-0008", "The biblical narratives apparently disagree with regard to the duration of the sojourn "
                             "in Egypt.")]),
]


def fixtures() -> dict[str, list]:
    from m3agent.samples.synth import Scene

    def scene(person, photo, voice, text):
        return Scene(person, str(FACES / photo) if photo else None, voice, text, min_seconds=10.0)

    alike = [("marcus", "obama.jpg", "en-us", ["Hello, my name is Marcus. I repair old clocks in my workshop.",
                                               "I left my ladder leaning on the shed.",
                                               "Tomorrow I will visit my aunt in the mountains."]),
             ("felix", "biden.jpg", "en-gb", ["Good evening, my name is Felix. I teach chemistry at the high school.",
                                              "My dog chewed the garden hose again.",
                                              "I am saving money for a sailing boat."]),
             ("nora", "train_rose_leslie_img1.jpg", "en+f3", ["Hi, I am Nora. I run a bakery near the station.",
                                                             "The oven broke on Monday morning.",
                                                             "I planted sunflowers along the fence."])]
    pair = [("left", "en-us+m3", ["My name is Owen and I sell bicycles.", "The shop opens at nine every day.",
                                  "I repaired a red tandem this morning."]),
            ("right", "en-gb-x-rp+m7", ["I am Hugo, I write crossword puzzles.", "My last puzzle had a hidden fox.",
                                        "Next week I travel to Lisbon by train."])]
    espeak = {"espeak-m3": ("alex-lacamoire.png", "en-us+m3", ["My name is Victor, I tune pianos for a living.",
                                                                "The old piano in the church needs new strings."]),
              "espeak-f4": ("test_johnsnow_test1.jpg", "en+f4", ["I am Clara, and I keep the lighthouse on the cape.",
                                                                  "Last night the fog horn sounded until dawn."])}
    after_round = [["espeak-m3"], ["espeak-f4"], ["espeak-m3", "espeak-f4"]]  # each espeak voice speaks twice
    mix, said = [], dict.fromkeys(espeak, 0)
    for t in range(3):  # the readers take turns, one utterance each a round, then the round's espeak voices
        for person, photo, speaker, lines in READERS:
            utterance, words = lines[t]
            mix.append(Scene(person, str(FACES / photo), None, words, min_seconds=10.0,
                             audio=str(LIBRISPEECH / speaker / f"{utterance}.flac")))
        for person in after_round[t]:
            photo, voice, lines = espeak[person]
            mix.append(scene(person, photo, voice, lines[said[person]]))
            said[person] += 1
    return {
        "alike-voices": [scene(p, photo, voice, lines[t]) for t in range(3) for p, photo, voice, lines in alike],
        "two-on-screen": [scene(p, "test_obama_and_biden.jpg", voice, lines[t]) for t in range(3)
                          for p, voice, lines in pair],
        "off-screen": [scene("ada", "train_rose_leslie_img1.jpg", "en+f4", "Hello, I am Ada. I grow tomatoes."),
                       scene("narrator", None, "en-gb-x-rp+m7", "Meanwhile, the storm was coming over the hills."),
                       scene("ben", "obama.jpg", "en-us+m3", "My name is Ben. I fix roofs after storms."),
                       scene("narrator", None, "en-gb-x-rp+m7", "By evening the rain had reached the village."),
                       scene("ada", "train_rose_leslie_img1.jpg", "en+f4", "The tomatoes need shelter tonight."),
                       scene("ben", "obama.jpg", "en-us+m3", "I will check the barn roof first.")],
        "two-photos": [scene("sam", "obama.jpg", "en-us+m3", "My name is Sam and I keep bees."),
                       scene("lea", "train_rose_leslie_img1.jpg", "en+f4",
                             "I am Lea, and I paint old fishing boats in the harbour every summer."),
                       scene("sam", "obama2.jpg", "en-us+m3", "The bees made honey early this year."),
                       scene("lea", "train_rose_leslie_img1.jpg", "en+f4",
                             "The blue boat with the white stripe is almost finished now."),
                       scene("sam", "obama2.jpg", "en-us+m3", "I sell the honey at the Saturday market.")],
        "librispeech-mix": mix,
    }


def score(export: dict, timings, problems: int, faces_scored: bool) -> dict:
    from bench.identity_scores import merged, merges, nodes_a_person, voice_people
    from m3agent.samples.synth import who_at

    voices, face_people = voice_people(export, timings), {}
    for node in export["nodes"]:
        if faces_scored and node["kind"] == "episodic" and "on screen" in (node["text"] or ""):
            times = [int(m) * 60 + int(s) for m, s in re.findall(r"(\d\d):(\d\d)", node["text"])]
            for face in node["entities"]:
                face_people.setdefault(face, set()).add(who_at(timings, sum(times) / len(times), window=0.3))
    speakers = {t.person for t in timings if t.person and t.text}
    seen = {t.person for t in timings if t.person and t.image}
    out = {"people": len(speakers), "voice nodes": len(voices), "voice merges": merges(voices),
           "voice nodes a person": round(nodes_a_person(voices, speakers), 2),
           "face nodes": sum(n["kind"] == "face" for n in export["nodes"])}
    if faces_scored:
        out["face merges"] = merges(face_people)
        out["face nodes a person"] = round(nodes_a_person(face_people, seen), 2)
    out["check problems"] = problems
    # who is in each merged node (printed, not tabled), to say which people were taken for one
    out["merged"] = {**merged(voices), **merged(face_people)}
    return out


def run(only: list[str] | None) -> dict:
    from m3agent import factory
    from m3agent.config import load_config
    from m3agent.memorize import memorize_video
    from m3agent.memory import MemoryGraph
    from m3agent.samples.synth import build_episode

    config = load_config()
    perceiver, memorizer, embedder = factory.memorization_stack(config)
    tmp = Path(tempfile.mkdtemp(prefix="m3ident-"))
    results = {}
    for name, scenes in fixtures().items():
        if only and name not in only:
            continue
        video = tmp / f"{name}.mp4"
        timings = build_episode(scenes, video)
        with MemoryGraph.open(tmp / f"{name}.db", config.memory, embedder=embedder) as graph:
            t = time.perf_counter()
            memorize_video(video, graph, perceiver, memorizer, config.memorize, progress=False)
            seconds = time.perf_counter() - t
            problems = graph.identity_problems()
            results[name] = {**score(graph.export(), timings, len(problems), name != "two-on-screen"),
                             "seconds": round(seconds, 1)}
        print(name, json.dumps(results[name]), flush=True)
        for problem in problems:
            print("  check:", json.dumps(problem, default=str), flush=True)
    return results


def table(results: dict) -> str:
    keys = ["people", "voice nodes", "voice merges", "voice nodes a person", "face nodes", "face merges",
            "face nodes a person", "check problems"]
    rows = ["| fixture | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for name, r in results.items():
        rows.append(f"| {name} | " + " | ".join(str(r.get(k, "-")) for k in keys) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--write", type=Path, default=None, help="update this file's perf_identity block")
    args = parser.parse_args()
    results = run(args.only)
    text = table(results)
    print("\n" + text)
    if args.write:
        from bench.markers import replace_block
        from bench.perf_memory import machine

        head = (f"Machine: {machine()}. Date: {date.today()}. Command: "
                "`python -m bench.perf_identity --write docs/BENCHMARKS.md`.")
        replace_block(args.write, "perf_identity", head + "\n\n" + text)


if __name__ == "__main__":
    main()
