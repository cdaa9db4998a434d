"""What the mini M3-Bench's videos show and say, and what is asked about them.

Every scene lasts exactly ``SCENE_SECONDS`` (15 s: espeak's line plus a pause always fits), so scene ``i``
spans ``[15 i, 15 i + 15)`` and 30-second clip ``k`` holds scenes ``2k`` and ``2k + 1``, whatever the speech
synthesizer's exact timing. A question's evidence clips follow from the scenes it names.

The photos are real people's (tests/data/faces, MIT, from the face_recognition project); the names are
fictional and say nothing about who they are.
"""

from __future__ import annotations

from dataclasses import dataclass

SCENE_SECONDS = 15.0
ME, MH, CM, PU, GK = ("Multi-Evidence Reasoning", "Multi-Hop Reasoning", "Cross-Modal Reasoning",
                      "Person Understanding", "General Knowledge Extraction")

VOICES = {"male_us": "en-us+m3", "female": "en+f4", "male_gb": "en-gb-x-rp+m7"}


@dataclass(frozen=True)
class Person:
    name: str
    voice: str  # espeak-ng voice
    photos: tuple[str, ...]  # files in tests/data/faces


@dataclass(frozen=True)
class Ask:
    question: str
    answer: str
    types: tuple[str, ...]
    scenes: tuple[int, ...]  # scenes that hold the evidence
    at: int | None = None  # second of the video the question is asked at (None: at the end)


@dataclass(frozen=True)
class Video:
    id: str
    people: dict[str, Person]
    scenes: tuple[tuple[str | None, int, str], ...]  # (person key or None for an empty scene, photo index, line)
    asks: tuple[Ask, ...]
    #: (scene, text, where) written on a scene's picture: "panel" on a photo, "caption" band, "slide" (a white page
    #: instead of an empty scene's background); see m3agent.samples.screen_text.picture. Nobody says these aloud.
    shown: tuple[tuple[int, str, str], ...] = ()


DAVID = Person("David", VOICES["male_us"], ("obama.jpg", "obama2.jpg"))
SARAH = Person("Sarah", VOICES["female"], ("train_rose_leslie_img1.jpg", "train_rose_leslie_img2.jpg"))
PETER = Person("Peter", VOICES["male_gb"], ("biden.jpg", "train_biden_biden2.jpg"))
TOM_US = Person("Tom", VOICES["male_us"], ("alex-lacamoire.png", "train_alex_lacamoire_img1.jpg"))
TOM_GB = Person("Tom", VOICES["male_gb"], ("train_alex_lacamoire_img1.jpg", "alex-lacamoire.png"))
JAMES = Person("James", VOICES["male_gb"], ("lin-manuel-miranda.png",))

VIDEOS = (
    Video("m3mini_kitchen", {"david": DAVID, "sarah": SARAH, "peter": PETER}, (
        ("david", 0, "Hello, my name is David. I put the car keys in the blue bowl on the kitchen table."),
        ("sarah", 0, "Hi, I am Sarah. I bought four apples at the market this morning."),
        ("peter", 0, "Good morning, my name is Peter. I work as a nurse at the city hospital."),
        ("david", 1, "I keep my bicycle in the garage next to the red car."),
        (None, 0, ""),
        ("sarah", 1, "I bought three more apples on the way home."),
        ("peter", 1, "The train was late again today, so I walked to work."),
        ("david", 0, "I moved the car keys from the bowl into the drawer by the door."),
        ("sarah", 0, "Tomorrow I will bake an apple pie for my grandmother."),
        ("peter", 0, "Remember to turn off the oven before you leave the house."),
    ), (
        Ask("Where are the car keys?", "In the blue bowl on the kitchen table.", (PU,), (0,), at=95),
        Ask("Where are the car keys now?", "In the drawer by the door.", (ME,), (0, 7)),
        Ask("How many apples did Sarah buy in total?", "Seven.", (ME,), (1, 5)),
        Ask("Who said that the train was late?", "Peter.", (CM,), (6,)),
        Ask("What is Peter's job?", "He is a nurse.", (PU,), (2,)),
        Ask("Where does the man who walked to work because the train was late work?", "At the city hospital.",
            (MH, PU), (2, 6)),
        Ask("What should you do before you leave the house, according to the video?", "Turn off the oven.",
            (GK,), (9,)),
    )),
    Video("m3mini_office", {"tom": TOM_US, "james": JAMES, "sarah": SARAH}, (
        ("tom", 0, "Hello everyone, my name is Tom. I am the manager of this office."),
        ("james", 0, "Hi, my name is James. I fix the computers and the printers here."),
        ("sarah", 0, "Hi, I am Sarah. I write the news for the company website."),
        ("tom", 1, "The team meeting is on Monday morning."),
        ("james", 0, "The printer on the second floor is broken, so please use the printer in the hall."),
        (None, 0, ""),
        ("tom", 0, "Change of plan. The team meeting is moved to Friday afternoon."),
        ("sarah", 1, "I wrote two stories today, one about the new park and one about the river."),
        ("james", 0, "I fixed the printer on the second floor this afternoon."),
        ("sarah", 0, "Water boils at one hundred degrees Celsius, so let hot tea cool before you drink it."),
    ), (
        Ask("When is the team meeting?", "On Monday morning.", (PU,), (3,), at=95),
        Ask("When is the team meeting now?", "On Friday afternoon.", (ME,), (3, 6)),
        Ask("Who said that the printer on the second floor is broken?", "James.", (CM,), (4,)),
        Ask("What does James do in the office?", "He fixes the computers and the printers.", (PU,), (1,)),
        Ask("What did the woman who writes the news write about today?", "The new park and the river.", (MH,),
            (2, 7)),
        Ask("At what temperature does water boil, according to the video?", "100 degrees Celsius.", (GK,), (9,)),
        Ask("Is the printer on the second floor still broken at the end?", "No, James fixed it.", (ME, MH), (4, 8)),
    )),
    Video("m3mini_park", {"david": Person("David", DAVID.voice, ("obama2.jpg", "obama.jpg")),
                          "sarah": Person("Sarah", SARAH.voice, SARAH.photos[::-1]), "tom": TOM_GB}, (
        ("david", 0, "Hello, my name is David. I walk my dog in the park every morning."),
        ("sarah", 0, "Hi, my name is Sarah. I run five kilometers here on Saturdays."),
        ("tom", 0, "Hello, my name is Tom. My dog is called Max and he is three years old."),
        ("david", 1, "My dog is called Bella and she likes to swim in the lake."),
        ("sarah", 1, "I lost my green hat near the big oak tree."),
        (None, 0, ""),
        ("tom", 1, "I found a green hat under the wooden bench."),
        ("david", 0, "Bella is five years old, two years older than Max."),
        ("sarah", 0, "Thank you, that green hat is mine."),
        ("tom", 0, "You should drink water often when you run in hot weather."),
        (None, 0, ""),
        ("sarah", 1, "Next Saturday I will run ten kilometers instead of five."),
    ), (
        Ask("What is the name of Tom's dog?", "Max.", (PU,), (2,)),
        Ask("How old are the two dogs together?", "Eight years.", (ME,), (2, 7)),
        Ask("Who said that the dog likes to swim in the lake?", "David.", (CM,), (3,)),
        Ask("Where was Sarah's green hat found?", "Under the wooden bench.", (MH,), (4, 6, 8)),
        Ask("How far does Sarah run on Saturdays?", "Five kilometers.", (PU,), (1,), at=115),
        Ask("How far will Sarah run next Saturday?", "Ten kilometers.", (PU, ME), (1, 11)),
        Ask("What should you do when you run in hot weather, according to the video?", "Drink water often.",
            (GK,), (9,)),
    )),
    Video("m3mini_platforms", {"david": DAVID, "sarah": SARAH, "peter": PETER}, (
        ("david", 0, "Hello, my name is David. I am waiting for my train."),
        (None, 0, ""),
        ("sarah", 0, "Hi, my name is Sarah. I bought sandwiches for the journey."),
        ("peter", 0, "Good morning, my name is Peter. I have misplaced my ticket."),
        (None, 0, ""),
        (None, 0, ""),
        ("david", 1, "Our train is late, so I will wait here."),
        ("sarah", 1, "See you all in Oxford."),
    ), (
        Ask("What platform does the text show while David waits?", "Platform 9.", (CM,), (0,)),
        Ask("At what time does the Oxford train depart, according to the text?", "10:45.", (CM,), (1,)),
        Ask("What does the text say where Sarah buys sandwiches?", "Hot sandwiches.", (CM,), (2,)),
        Ask("Where should Peter ask about his lost ticket, according to the text?", "At window 3.", (MH,), (3, 4)),
        Ask("What is expected tonight, according to the caption text?", "Delays.", (CM,), (7,)),
    ), shown=(
        (0, "PLATFORM 9", "panel"),
        (1, "Departures\nOxford 10:45\nBath 11:20", "slide"),
        (2, "HOT SANDWICHES", "panel"),
        (3, "EXIT B", "panel"),
        (4, "Lost and found\nAsk at window 3 for lost tickets", "slide"),
        (7, "Delays expected tonight", "caption"),
    )),
)
