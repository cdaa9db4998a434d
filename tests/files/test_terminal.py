"""The one rule for text printed to a terminal."""

import json

from m3agent.files.terminal import dumps, safe


def test_controls_and_direction_marks_are_shown_not_obeyed():
    assert safe("a\x1b]0;title\x07b") == "a\\x1b]0;title\\x07b"
    assert safe("\x9b2J \u202eevil\u2066 \x7f") == "\\x9b2J \\u202eevil\\u2066 \\x7f"
    assert safe("line\none\tx") == "line\none\tx" and safe("line\none", one_line=True) == "line\\x0aone"
    plain = "Zoë 你好 😀 — “quoted” ‍"
    assert safe(plain) == plain


def test_json_output_escapes_the_same_characters_and_still_parses_to_what_memory_holds():
    data = {"text": "a\x1b[2J\u202e\x9b b", "name": "Zoë"}
    text = dumps(data, indent=2)
    assert not any(c in text for c in "\x1b\u202e\x9b") and "Zoë" in text
    assert json.loads(text) == data
