"""Identities that never collapse: two people who sound alike are kept apart by what memory already knows
(each spoke while only their own face was on screen), and a fold records why it was made."""

import pytest

from m3agent.memory import NodeKind
from m3agent.samples.synth import Scene, build_episode
from tests.data import FACES
from tests.memorize.test_pipeline import memorize, stack  # noqa: F401 - the session's embedded models

pytestmark = pytest.mark.models

# two male espeak voices of one synthesizer (American and British) are closer than CAM++'s threshold: on the
# code before cannot-links, both men became one voice node that said both names, and the first man's face had
# no voice at all
PEOPLE = {"marcus": ("en-us", "Marcus", "obama.jpg"), "felix": ("en-gb", "Felix", "biden.jpg"),
          "nora": ("en+f3", "Nora", "train_rose_leslie_img1.jpg")}
LINES = {"marcus": ["Hello, my name is Marcus. I repair old clocks in my workshop.",
                    "I left my ladder leaning on the shed.", "Tomorrow I will visit my aunt in the mountains."],
         "felix": ["Good evening, my name is Felix. I teach chemistry at the high school.",
                   "My dog chewed the garden hose again.", "I am saving money for a sailing boat."],
         "nora": ["Hi, I am Nora. I run a bakery near the station.", "The oven broke on Monday morning.",
                  "I planted sunflowers along the fence."]}


@pytest.fixture(scope="module")
def alike(stack, tmp_path_factory):  # noqa: F811
    folder = tmp_path_factory.mktemp("alike")
    scenes = [Scene(p, str(FACES / photo), voice, LINES[p][turn], min_seconds=10.0)
              for turn in range(3) for p, (voice, _, photo) in PEOPLE.items()]
    build_episode(scenes, folder / "alike.mp4")
    graph, _ = memorize(folder / "alike.mp4", folder / "alike.db", stack)
    yield graph
    graph.close()


def test_two_alike_voices_seen_as_two_faces_are_two_people(alike):
    video = alike.resolve_video("alike.mp4").id
    cmap = alike.characters(video)
    voices = [n for n, kind in cmap.kinds.items() if kind is NodeKind.VOICE]
    faces = [n for n, kind in cmap.kinds.items() if kind is NodeKind.FACE]
    assert len(faces) == 3 and len(voices) == 3  # one node a person, none holding two
    for character, members in cmap.members.items():  # each voice with its own face
        kinds = sorted(cmap.kinds[m].label for m in members)
        assert kinds == ["face", "voice"], (character, members)
    named = alike.stated_names(video, voices)
    assert all(len(names) == 1 for names in named.values()), named  # no voice node gave two names
    assert any("Felix" in names for names in named.values())
