"""One door into memory: code outside ``m3agent/memory/`` goes through :class:`MemoryGraph`'s methods, never
through the graph to its parts (``graph.store``, ``graph.writer``).

The rule is deliberately blunt: any attribute named ``store`` or ``writer`` (or ``getattr`` of one) in the
product code outside the memory package is flagged, whatever object it is read from, because the reader
cannot know from the source alone whether that object is a graph. The few objects that legitimately carry
such an attribute are listed in ``ALLOWED``, each with why. Tests may still look inside a graph (white-box
assertions); the rule covers the package, ``app/``, ``pipelines/`` and ``bench/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import m3agent

REPO = Path(m3agent.__file__).resolve().parent.parent
SCANNED = ("m3agent", "app", "pipelines", "bench")
INSIDE = Path("m3agent") / "memory"  # the memory package itself: its parts may use one another
PARTS = frozenset({"store", "writer"})

# (file, expression): uses that are not a graph's parts.
ALLOWED = frozenset({
    # ResultsFile.writer is a string, the name of the command that writes the results file (for messages).
    ("m3agent/files/resumable.py", "self.writer"),
})


def scanned_files() -> list[Path]:
    files = []
    for top in SCANNED:
        files += [p for p in sorted((REPO / top).rglob("*.py")) if not p.relative_to(REPO).is_relative_to(INSIDE)]
    return files


def reaches_in(source: str, name: str = "<source>") -> list[tuple[int, str]]:
    """``(line, expression)`` of every read of a graph part's attribute name in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, ast.Attribute) and node.attr in PARTS:
            found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in PARTS):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_the_checker_finds_a_reach_into_the_graph():
    source = ("def f(graph, tools):\n"
              "    graph.store.video_meta(1)\n"
              "    with tools.graph.writer.lock:\n"
              "        getattr(graph, 'store')\n"
              "    from m3agent.memory.store import writing\n")  # an import of the module is not a reach
    assert reaches_in(source) == [(2, "graph.store"), (3, "tools.graph.writer"), (4, "getattr(graph, 'store')")]


def test_no_code_outside_memory_reaches_into_the_graph():
    files = scanned_files()
    assert any(p.name == "tools.py" and p.parent.name == "memory_tools" for p in files)  # the scan sees the package
    offences = []
    for path in files:
        relative = path.relative_to(REPO).as_posix()
        offences += [f"{relative}:{line}: {expr}" for line, expr in reaches_in(path.read_text(encoding="utf-8"), relative)
                     if (relative, expr) not in ALLOWED]
    assert not offences, ("code outside m3agent/memory/ reaches through MemoryGraph into its store or writer; give "
                          "MemoryGraph a method for it instead:\n" + "\n".join(offences))
