"""The one reader of the project's JSON-lines and JSON inputs: records, questions, queries, tasks, annotations.

Every command that reads a file a person gives it reads it here, so the rules hold everywhere:

* **Encoding.** UTF-8 (a BOM is skipped) or UTF-16 with its BOM (Windows Notepad's "Unicode"); a NUL byte
  or bytes that are not UTF-8 are an error naming the line, never garbled text.
* **Bounds.** A file is read as a stream: no line may be longer than ``max_line`` characters (a file
  without newlines, ``/dev/zero``, is refused at the line, not read into memory whole), and a whole-file
  read stops at ``limit``.
* **Text only.** JSON may spell a lone surrogate (``"\\ud800"``), which decodes to a string no file or
  database can store; such a value is refused like a line that is not JSON.
* **Lines** are split at ``"\\n"`` only (a ``"\\r\\n"`` ending is JSON white space): JSON text written with
  ``ensure_ascii=False`` may hold U+2028 and the other characters :meth:`str.splitlines` also breaks at.
  Blank lines are skipped.

Each reader names its own error type and wording; the messages are templates over ``{source}`` (the file),
``{number}`` (the line, from 1), ``{msg}`` (why the line was refused), ``{exc}`` (the same, in full) and, for a
file that cannot be read, ``{reason}``.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from m3agent.errors import M3AgentError

NOT_JSON = "{source}:{number}: not JSON ({msg})"
UNREADABLE = "cannot read {source}: {reason}"
#: the longest line any input may have (characters): far above any record, question or task, far below memory
MAX_LINE = 64_000_000
#: the most a whole-file read (a JSON document) takes in (characters)
MAX_FILE = 1_000_000_000
_CHUNK = 2**20
_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class JsonLinesError(M3AgentError, ValueError):
    """A JSON-lines file that cannot be read, or a line of it that is not JSON (the message names both)."""


class LineError(ValueError):
    """One line (or document) that is not a JSON value a file or database can hold; ``msg`` says why."""

    def __init__(self, msg: str):
        super().__init__(msg)
        self.msg = msg


def loads(text: str) -> Any:
    """``json.loads`` that refuses what is not text: :class:`LineError` for invalid JSON and for a lone
    surrogate escape (a pair, an emoji written ``\\ud83d\\ude00``, is text and passes)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(exc.msg) from exc
    except RecursionError as exc:
        raise LineError("nested too deeply") from exc
    if _LONE_SURROGATE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            code = "".join(f"\\u{ord(c):04x}" for c in exc.object[exc.start:exc.end])
            raise LineError(f"holds a lone surrogate {code}, which is not text") from exc
    return value


class _Decoded:
    """The text of a file as a stream of chunks: encoding chosen by its BOM, NULs and bad bytes named by line."""

    def __init__(self, path: str | os.PathLike[str], error: type[M3AgentError], unreadable: str):
        self.path, self.error, self.unreadable = path, error, unreadable
        self.line = 1  # the line the chunk being decoded starts in

    def _fail(self, exc: BaseException | str) -> M3AgentError:
        reason = exc if isinstance(exc, str) else (getattr(exc, "strerror", None) or exc)
        return self.error(self.unreadable.format(source=self.path, reason=reason))

    def chunks(self) -> Iterator[str]:
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed below, around the generator's life
        except OSError as exc:
            raise self._fail(exc) from exc
        with fh:
            try:
                head = fh.read(_CHUNK)
            except OSError as exc:
                raise self._fail(exc) from exc
            utf16 = head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
            decoder = codecs.getincrementaldecoder("utf-16" if utf16 else "utf-8-sig")()
            data = head
            while True:
                final = not data
                if not utf16 and b"\0" in data:  # text other than UTF-16 has none: a binary file
                    line = self.line + data.count(b"\n", 0, data.index(b"\0"))
                    raise self.error(f"{self.path}:{line}: NUL byte: not a text file")
                try:
                    text = decoder.decode(data, final=final)
                except UnicodeDecodeError as exc:
                    raise self._bad_bytes(data, exc, utf16) from exc
                if utf16 and "\0" in text:
                    line = self.line + text.count("\n", 0, text.index("\0"))
                    raise self.error(f"{self.path}:{line}: NUL character: not a text file")
                if text:
                    yield text
                    self.line += text.count("\n")
                if final:
                    return
                try:
                    data = fh.read(_CHUNK)
                except OSError as exc:
                    raise self._fail(exc) from exc

    def _bad_bytes(self, data: bytes, exc: UnicodeDecodeError, utf16: bool) -> M3AgentError:
        if utf16:
            return self._fail(f"not UTF-16 text after its UTF-16 mark ({exc.reason})")
        line = self.line + data.count(b"\n", 0, max(exc.start, 0))
        byte = data[exc.start] if 0 <= exc.start < len(data) else None
        shown = f" (byte 0x{byte:02x})" if byte is not None else ""
        return self.error(f"{self.path}:{line}: not UTF-8 text{shown}; save it as UTF-8")


def read_text(path: str | os.PathLike[str], *, error: type[M3AgentError] = JsonLinesError,
              unreadable: str = UNREADABLE, limit: int = MAX_FILE) -> str:
    """The whole text of ``path`` (UTF-8 or UTF-16 with a BOM); ``error`` when it cannot be read, is not text,
    or holds more than ``limit`` characters."""
    parts, size = [], 0
    for chunk in _Decoded(path, error, unreadable).chunks():
        size += len(chunk)
        if size > limit:
            raise error(f"{path} holds more than {limit:,} characters: not read")
        parts.append(chunk)
    return "".join(parts)


def numbered_lines(text: str | Iterable[str], max_line: int = MAX_LINE) -> Iterator[tuple[int, str | None]]:
    """The lines of ``text`` (a string, or its chunks in order) that are not blank, each with its number
    (from 1); a line longer than ``max_line`` comes as ``None``, its text never held whole."""
    chunks = (text,) if isinstance(text, str) else text
    number, pending, held, too_long = 1, [], 0, False
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find("\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not too_long:
                held += len(piece)
                if held > max_line:
                    too_long, pending = True, []
                else:
                    pending.append(piece)
            if end < 0:
                break
            if too_long:
                yield number, None
            else:
                line = "".join(pending)
                if line.strip():
                    yield number, line
            number, pending, held, too_long, start = number + 1, [], 0, False, end + 1
    if too_long:
        yield number, None
    elif pending and "".join(pending).strip():
        yield number, "".join(pending)


def file_lines(path: str | os.PathLike[str], *, error: type[M3AgentError] = JsonLinesError,
               unreadable: str = UNREADABLE, max_line: int = MAX_LINE) -> Iterator[tuple[int, str | None]]:
    """:func:`numbered_lines` of a file, read as a stream (see the module's rules)."""
    return numbered_lines(_Decoded(path, error, unreadable).chunks(), max_line)


def too_long(max_line: int) -> str:
    """Why a line :func:`numbered_lines` gave as ``None`` was refused."""
    return f"longer than {max_line:,} characters: refused"


def json_lines(text: str | Iterable[tuple[int, str | None]], source: str | os.PathLike[str], *,
               error: type[M3AgentError] = JsonLinesError, message: str = NOT_JSON, torn_tail: bool = False,
               max_line: int = MAX_LINE) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each line that is not blank, of ``text`` or of numbered lines; ``error`` with
    ``message`` filled in at the first line that is not JSON (or too long), except, with ``torn_tail``, the
    text's last (a write cut short)."""
    if isinstance(text, str):
        last, lines = text.count("\n") + 1, numbered_lines(text, max_line)
    else:
        last, lines = None, text
    for number, line in lines:
        try:
            if line is None:
                raise LineError(too_long(max_line))
            value = loads(line)
        except LineError as exc:
            if torn_tail and number == last:
                return
            raise error(message.format(source=source, number=number, msg=exc.msg, exc=exc.msg)) from exc
        yield number, value


def read_json_lines(path: str | os.PathLike[str], *, error: type[M3AgentError] = JsonLinesError,
                    message: str = NOT_JSON, unreadable: str = UNREADABLE, max_line: int = MAX_LINE) -> list[Any]:
    """The values of a JSON-lines file, in order (see :func:`json_lines`), read as a stream."""
    lines = file_lines(path, error=error, unreadable=unreadable, max_line=max_line)
    return [value for _, value in json_lines(lines, path, error=error, message=message, max_line=max_line)]
