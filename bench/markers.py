"""Results files are hand-written prose around generated blocks: a block lives between
``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` and a benchmark script replaces only that."""

from __future__ import annotations

from pathlib import Path


def replace_block(path: Path, name: str, body: str) -> None:
    """Put ``body`` between the markers of ``name`` in ``path`` (appended, with its markers, if absent)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n\n{body.strip()}\n\n{end}"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
