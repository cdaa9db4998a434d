"""The package's import graph has no cycle, and its rooms stand on one another: parts never import what
composes them.

Every ``import`` in every module counts, including those inside functions and ``TYPE_CHECKING`` blocks: a
lazy import hides a cycle from Python, not from the design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import m3agent

ROOT = Path(m3agent.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules ``name`` imports (``from pkg import sub`` counts as importing ``pkg.sub``)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_finder_sees_a_cycle():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    modules = package_modules()
    graph = {name: imports_of(name, path, set(modules)) for name, path in modules.items()}
    assert find_cycles(graph) == []


def test_memory_parts_never_import_the_facade():
    modules = package_modules()
    parts = [n for n in modules if n.startswith("m3agent.memory.") and n != "m3agent.memory.graph"]
    offenders = {n for n in parts if {"m3agent.memory.graph", "m3agent.memory"} & imports_of(n, modules[n], set(modules))}
    assert offenders == set()


# ------------------------------------------------------------------------------------------------ rooms
#: top-level modules and packages grouped into one room; every other subpackage is a room of its own
GROUPS = {
    # errors, the config tree, the backend registry, prompts, files in and out (files/ stands on errors alone)
    **dict.fromkeys(("m3agent", "errors", "config", "registry", "prompts", "files"), "base"),
    # what the user runs: the command line (cli/, __main__) and the app's workspace (workspace/)
    **dict.fromkeys(("cli", "__main__", "workspace"), "app"),
}

#: the rooms, lowest first. A module imports its own room and rooms of lower levels, never a room of its own
#: level or above. The factory is the composition root: it may import any room below it, and only the rooms
#: that compose (training data, jobs, the CLI and the app) import it.
LEVELS = (
    ("base",),
    ("models", "media", "samples"),
    ("perception", "testing"),  # testing: test helpers that start model servers
    ("memory",),
    ("memorize", "memory_tools"),
    ("control",),
    ("eval",),  # judges, rewards, benchmarks' data and scoring, MemoryBench systems and corpora
    ("envs",),
    ("factory",),
    ("train", "jobs"),
    ("app",),
)
LEVEL = {room: level for level, rooms in enumerate(LEVELS) for room in rooms}


def room_of(module: str) -> str:
    parts = module.split(".")
    first = parts[1] if len(parts) > 1 else parts[0]
    return GROUPS.get(first, first)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``importer -> imported (room level -> room level)`` for every import into another room not below its own."""
    out = []
    for name in sorted(graph):
        here = room_of(name)
        for target in sorted(graph[name]):
            there = room_of(target)
            if there != here and LEVEL[there] >= LEVEL[here]:
                out.append(f"{name} -> {target} ({here} {LEVEL[here]} -> {there} {LEVEL[there]})")
    return out


def test_finder_sees_an_upward_import():
    graph = {"m3agent.memory.search": {"m3agent.control.loop", "m3agent.config"}, "m3agent.control.loop": set(),
             "m3agent.config": set(), "m3agent.jobs.qa": {"m3agent.train.tasks"}, "m3agent.train.tasks": set()}
    assert upward_imports(graph) == ["m3agent.jobs.qa -> m3agent.train.tasks (jobs 9 -> train 9)",
                                     "m3agent.memory.search -> m3agent.control.loop (memory 3 -> control 5)"]


def test_every_room_has_a_level():
    rooms = {room_of(name) for name in package_modules()}
    assert rooms - set(LEVEL) == set(), "place each new room in LEVELS"


def test_no_room_imports_one_above_it():
    modules = package_modules()
    graph = {name: imports_of(name, path, set(modules)) for name, path in modules.items()}
    upward = upward_imports(graph)
    assert not upward, f"{len(upward)} imports go up or sideways between rooms:\n" + "\n".join(upward)
