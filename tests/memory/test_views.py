"""Character cards and the timeline: what the app's views and ``m3agent characters/timeline`` show."""


def test_cards_join_face_and_voice_with_name_crops_voice_and_clips(kitchen):
    cards = {c.name: c for c in kitchen.character_cards()}
    alice, bob = cards["Alice"], cards[None]
    a, av = kitchen.ids["alice_face"], kitchen.ids["alice_voice"]
    assert alice.members == [f"face_{a}", f"voice_{av}"]
    assert alice.clips == [0, 1] and alice.faces == [b"\xff\xd8ALICECROP"]
    assert (alice.voice.start, alice.voice.end, alice.voice.text) == (3.0, 5.0, "hi I am Alice")
    assert alice.label == f"Alice (character_{a})" and alice.lines >= 4
    assert bob.voice is None and bob.faces == [b"\xff\xd8BOBCROP"] and bob.clips == [1]
    assert alice.to_dict()["face_crops"] == 1 and "faces" not in alice.to_dict()


def test_timeline_names_people_and_marks_superseded_facts(kitchen):
    clips = kitchen.timeline()
    assert [c.clip for c in clips] == [0, 1, 2, 3]
    a = kitchen.ids["alice_face"]
    first = {line.id: line for line in clips[0].lines}
    assert f"Alice (character_{a}) opens the fridge in the kitchen" in [line.text for line in clips[0].lines]
    full = first[kitchen.ids["fridge_full"]]
    assert (full.superseded_by, full.superseded_at) == (kitchen.ids["fridge_empty"], 2)
    assert all(line.superseded_by is None for line in clips[2].lines)
    assert "<face_" not in " ".join(line.text for c in clips for line in c.lines)


def test_timeline_of_one_character_keeps_its_clips_and_lines_only(kitchen):
    bob = kitchen.resolve_character(None, f"character_{kitchen.ids['bob_face']}")
    clips = kitchen.timeline(character=bob)
    assert [c.clip for c in clips] == [1, 3]
    assert all(f"character_{bob}" in line.text for c in clips for line in c.lines)
    assert kitchen.resolve_character(None, "alice") == kitchen.ids["alice_face"]
