"""JSON lines, as the project's data files hold them: one JSON value a line, blank lines skipped.

Lines are split at ``"\\n"`` only (a ``"\\r\\n"`` ending is JSON white space): JSON text written with
``ensure_ascii=False`` may hold U+2028 and the other characters :meth:`str.splitlines` also breaks at. Each
reader names its own error type and wording; the messages are templates over ``{source}`` (the file),
``{number}`` (the line, from 1), ``{msg}`` (the JSON error's reason), ``{exc}`` (the whole JSON error) and, for
a file that cannot be read, ``{reason}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from m3agent.errors import M3AgentError

NOT_JSON = "{source}:{number}: not JSON ({msg})"
UNREADABLE = "cannot read {source}: {reason}"


class JsonLinesError(M3AgentError, ValueError):
    """A JSON-lines file that cannot be read, or a line of it that is not JSON (the message names both)."""


def read_text(path: str | os.PathLike[str], *, error: type[M3AgentError] = JsonLinesError,
              unreadable: str = UNREADABLE) -> str:
    """The UTF-8 text of ``path``; ``error`` with ``unreadable`` filled in when it cannot be read or decoded."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(unreadable.format(source=path, reason=exc)) from exc


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` that are not blank, each with its number (from 1)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line


def json_lines(text: str, source: str | os.PathLike[str], *, error: type[M3AgentError] = JsonLinesError,
               message: str = NOT_JSON, torn_tail: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each line of ``text`` that is not blank; ``error`` with ``message`` filled in
    at the first line that is not JSON, except, with ``torn_tail``, the text's last (a write cut short)."""
    last = text.count("\n") + 1
    for number, line in numbered_lines(text):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            if torn_tail and number == last:
                return
            raise error(message.format(source=source, number=number, msg=exc.msg, exc=exc)) from exc
        yield number, value


def read_json_lines(path: str | os.PathLike[str], *, error: type[M3AgentError] = JsonLinesError,
                    message: str = NOT_JSON, unreadable: str = UNREADABLE, torn_tail: bool = False) -> list[Any]:
    """The values of a JSON-lines file, in order (see :func:`json_lines`)."""
    text = read_text(path, error=error, unreadable=unreadable)
    return [value for _, value in json_lines(text, path, error=error, message=message, torn_tail=torn_tail)]
