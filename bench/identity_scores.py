"""How people spread over identity nodes: the scoring the identity benchmarks share (``perf_identity.py``,
``perf_voices.py``, ``perf_faces.py``).

Each takes ``node_people``: for every node, the set of people it holds by the benchmark's ground truth (``None``
in a set, nobody known, is no person). A merge is a node holding two or more people, the costly error (0 is the
goal); "nodes a person" is the mean number of nodes each person is in (1.0 is ideal, above 1 someone is split
over several nodes, the cheap error; below 1 someone is in none).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping


def voice_people(export: dict, timings) -> dict[int, set[str]]:
    """The people speaking at each voice node's segments (at each segment's middle) of a ``MemoryGraph.export``."""
    from m3agent.samples.synth import who_at

    return {node["id"]: {who_at(timings, (s["start"] + s["end"]) / 2, speech=True)
                         for s in node.get("segments", [])} - {None}
            for node in export["nodes"] if node["kind"] == "voice"}


def merged(node_people: Mapping[Hashable, Collection]) -> dict[Hashable, list]:
    """The nodes holding two or more people, each with its people (sorted)."""
    return {node: sorted(set(who) - {None}) for node, who in node_people.items() if len(set(who) - {None}) > 1}


def merges(node_people: Mapping[Hashable, Collection]) -> int:
    """How many nodes hold two or more people."""
    return len(merged(node_people))


def nodes_a_person(node_people: Mapping[Hashable, Collection], people: Collection) -> float:
    """The mean number of nodes each of ``people`` is in (0.0 for no people)."""
    return sum(sum(p in who for who in node_people.values()) for p in people) / max(len(people), 1)
