"""The one rule for text printed to a terminal: what memory holds is shown, never obeyed.

Lines, transcripts, names and records come from videos and files anyone can make. Printed raw, an escape
sequence in them (``ESC ]0;title``, ``ESC [2J``, the one-byte CSI ``\\x9b``) drives the reader's terminal, and a
bidirectional override (U+202E) makes text read as something else. Every such character is printed as its
escape (``\\x1b``, ``\\u202e``); plain text, accents, CJK and emoji are untouched. JSON output escapes the same
characters the JSON way (``\\u001b``), so it still parses to exactly what memory holds.
"""

from __future__ import annotations

import json
import re
from typing import Any

# C0 and C1 controls but tab and newline, DEL, the bidi embeddings, overrides and isolates, the directional
# marks, and the line and paragraph separators
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile(_UNSAFE.pattern[:-1] + "\t\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object, *, one_line: bool = False) -> str:
    """``text`` as it may be printed: every control and direction character shown as its escape (with
    ``one_line``, newlines and tabs too)."""
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_escape, str(text))


def dumps(data: Any, **kwargs: Any) -> str:
    """``json.dumps(data, ensure_ascii=False)`` with the characters :func:`safe` escapes written as ``\\uXXXX``
    (JSON already escapes C0 controls; C1 controls and direction characters it leaves raw)."""
    text = json.dumps(data, ensure_ascii=False, **kwargs)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
