"""characters --check: where identities look wrong, read from memory alone."""

import json

from m3agent.cli import main


def test_a_clean_memory_has_no_problem_and_a_collapsed_voice_is_listed(kitchen, db_path, capsys):
    assert kitchen.identity_problems() == []
    voice, bob = kitchen.ids["alice_voice"], kitchen.ids["bob_face"]
    with kitchen.clip(kitchen.video, 3, 90, 120, append=True) as b:  # Alice's voice node now speaks as Bob too
        b.semantic(f"Equivalence: <face_{bob}>, <voice_{voice}>")
        b.semantic(f"<voice_{voice}>'s name is Robert")
    problems = kitchen.identity_problems()
    assert {p["problem"] for p in problems} == {"known by two names", "one voice seen speaking as two faces"}
    two_faces = next(p for p in problems if p["problem"].startswith("one voice"))
    assert two_faces["voice"] == f"voice_{voice}" and f"face_{bob}" in two_faces["faces"]
    assert next(p for p in problems if p["problem"] == "known by two names")["names"] == ["Alice", "Robert"]
    kitchen.close()
    assert main(["characters", str(db_path), "--check"]) == 1  # scripts gate on it
    assert len(json.loads(capsys.readouterr().out)) == 2
