"""Import M3-Agent ``VideoGraph`` pickles: untrusted input, read without running code and in bounded memory.

:func:`load_m3_pickle` reads the file with pickle's pure-Python unpickler (its memo is a dict, so a
forged memo index cannot make it allocate gigabytes the way the C unpickler does) and resolves only an
allow-list: M3-Agent's ``VideoGraph``/``VideoGraph.Node`` (mapped to inert stubs), numpy's reconstruction
of plain numeric arrays, and plain containers. What the file's calls build, and every item later read
from it, is charged to one budget proportional to the file size, so a few KB of shared references (a
"billion laughs") cannot expand to gigabytes. Every field the import uses is then checked and copied
into plain :class:`M3Graph` data before any memory graph is touched, so a bad file never leaves a
half-written memory. Every failure is an :class:`M3ImportError` naming the file and the cause.
"""

from __future__ import annotations

import base64
import binascii
import collections
import io
import os
import pickle
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from m3agent.config import DEFAULT_CLIP_SECONDS
from m3agent.errors import M3AgentError
from m3agent.memory.tags import rewrite_tags

try:
    from numpy._core.multiarray import scalar as _np_scalar
except ImportError:  # numpy < 2
    from numpy.core.multiarray import scalar as _np_scalar

MAX_PICKLE_BYTES = 2 << 30  # 2 GiB: M3-Agent's graphs are far smaller, and the file is read whole
ITEMS_PER_BYTE = 8  # budget per file byte: an honest pickle spends about one item per byte or less
MAX_CLIP = 10**7  # clip numbers (M3-Agent's ``timestamp``) stay below this: ~9 years of 30 s clips
MAX_TUPLE_DEPTH = 100  # hashing a deeper tuple recurses in C and can crash the interpreter
KINDS = {"img": "face", "voice": "voice", "episodic": "episodic", "semantic": "semantic"}


class M3ImportError(M3AgentError, ValueError):
    """An M3-Agent pickle that cannot be imported. The message names the file and the cause, and for a
    bad field also the node id and the field."""


class UnsafePickleError(M3ImportError):
    """The pickle names a class or function outside the allow-list (loading it could run code)."""


# ------------------------------------------------------------------------------------ unpickling
class _Stub:
    """Inert stand-in for an M3-Agent class: the pickle can only fill its ``__dict__``."""

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)


class _Node(_Stub):
    """Stand-in for ``VideoGraph.Node``: fields id, type, embeddings, metadata."""


class _VideoGraph(_Stub):
    """Stand-in for ``VideoGraph``: fields nodes, edges, text_nodes, text_nodes_by_clip, ..."""

    Node = _Node


class _NdarrayName:
    """What the pickle's ``numpy.ndarray`` resolves to: only an argument of :func:`_reconstruct`, so a
    pickle cannot ask numpy for an array of any shape it likes."""


def _reconstruct(cls: Any, shape: Any, code: Any) -> np.ndarray:
    """numpy pickles an array as an empty one that ``BUILD`` then fills: allow exactly that."""
    if cls is not _NdarrayName or type(shape) is not tuple or shape != (0,) or type(code) is not bytes:
        raise pickle.UnpicklingError("unexpected numpy array reconstruction")
    return np.empty(0, np.int8)


def _dtype(spec: Any, align: Any = False, copy: Any = False) -> np.dtype:
    """numpy pickles a dtype by its code ('f4'): allow plain numbers only (no objects, no records)."""
    dtype = np.dtype(spec, bool(align), bool(copy)) if type(spec) is str and len(spec) < 8 else None
    if dtype is None or dtype.kind not in "biufc":
        raise pickle.UnpicklingError(f"refusing numpy dtype {_brief(spec)} (only numbers are allowed)")
    return dtype


def _array_state(state: Any) -> bool:
    """numpy's array state ``(1, shape, dtype, fortran, raw bytes)``; numpy checks the byte count."""
    return type(state) is tuple and len(state) == 5 and isinstance(state[2], np.dtype) \
        and not state[2].hasobject and type(state[4]) is bytes


def _dtype_state(state: Any) -> bool:
    """The state of a plain number dtype: ``(3, byte order, None, None, None, -1, -1, 0)``."""
    return type(state) is tuple and len(state) == 8 and state[0] == 3 and state[1] in ("<", ">", "|", "=") \
        and state[2:] == (None, None, None, -1, -1, 0)


_GRAPH_MODULES = ("videograph", "mmagent.videograph")
_NUMPY_MODULES = ("numpy.core.multiarray", "numpy._core.multiarray")
_ALLOWED: dict[tuple[str, str], Any] = {
    **{(m, "VideoGraph"): _VideoGraph for m in _GRAPH_MODULES},
    **{(m, n): _Node for m in _GRAPH_MODULES for n in ("VideoGraph.Node", "Node")},
    **{(m, "_reconstruct"): _reconstruct for m in _NUMPY_MODULES},
    **{(m, "scalar"): _np_scalar for m in _NUMPY_MODULES},  # its dtype can only come from _dtype
    ("numpy", "ndarray"): _NdarrayName, ("numpy", "dtype"): _dtype,
    **{("builtins", t.__name__): t for t in (set, frozenset, complex, list, dict, tuple)},
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "defaultdict"): collections.defaultdict,
}


class _Budget:
    """Items a load may build or read; shared references are charged once per reference."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit, self.left = path, limit, limit

    def charge(self, items: int) -> None:
        self.left -= items
        if self.left < 0:
            raise M3ImportError(f"{self.path} expands to more than {self.limit:,} items (shared references?)")


def _size(obj: Any) -> int:
    if isinstance(obj, np.ndarray):
        return obj.size
    return len(obj) if isinstance(obj, list | tuple | dict | set | frozenset | str | bytes) else 1


class _Unpickler(pickle._Unpickler):
    """Pure-Python unpickler with hooks on the opcodes that call, build or nest: calls are charged to
    the budget, ``BUILD`` only fills stubs and plain numpy arrays, tuples stay shallow."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data: bytes, path: Path, budget: _Budget) -> None:
        super().__init__(io.BytesIO(data))
        self.path, self.budget = path, budget
        self.deep_tuples: dict[int, tuple[tuple, int]] = {}  # id -> (tuple kept alive, depth), depth > 1

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise UnsafePickleError(f"{self.path}: refusing to load {module[:100]}.{name[:100]} "
                                    "(not an M3-Agent graph, numpy array or plain container)")
        return _ALLOWED[module, name]

    def checked(self, obj: Any, charge: bool) -> None:
        if charge:
            self.budget.charge(1 + _size(obj))
        if type(obj) is tuple:
            depth = 1 + max((self.deep_tuples.get(id(x), (x, 1))[1] for x in obj if type(x) is tuple), default=0)
            if depth > MAX_TUPLE_DEPTH:
                raise pickle.UnpicklingError(f"tuples nested more than {MAX_TUPLE_DEPTH} deep")
            if depth > 1:
                self.deep_tuples[id(obj)] = (obj, depth)

    def load_build(self) -> None:
        state, inst = self.stack[-1], self.stack[-2]
        if not ((isinstance(inst, _Stub) and isinstance(state, dict))
                or (type(inst) is np.ndarray and _array_state(state))
                or (isinstance(inst, np.dtype) and _dtype_state(state))):
            raise pickle.UnpicklingError(f"refusing to set the state of {_brief(inst)}")
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build


def _after(load, charge: bool):
    def run(self: _Unpickler) -> None:
        load(self)
        self.checked(self.stack[-1], charge)

    return run


for _op, _charge in ((pickle.REDUCE, True), (pickle.NEWOBJ, True), (pickle.NEWOBJ_EX, True), (pickle.INST, True),
                     (pickle.OBJ, True), (pickle.TUPLE, False), (pickle.TUPLE1, False), (pickle.TUPLE2, False),
                     (pickle.TUPLE3, False)):
    _Unpickler.dispatch[_op[0]] = _after(pickle._Unpickler.dispatch[_op[0]], _charge)


# ------------------------------------------------------------------------------------ checking
@dataclass
class M3Node:
    """One checked M3-Agent node, in plain types."""

    id: int
    kind: str  # face | voice | episodic | semantic
    clip: int | None  # the clip of a text node (M3-Agent's ``timestamp``); None for faces and voices
    embeddings: list[np.ndarray]  # 1-D float32
    contents: list[str | bytes]  # text lines; transcripts; face crops (bytes or base64 text)


@dataclass
class M3Graph:
    """A checked M3-Agent graph: what :func:`import_m3_graph` writes."""

    path: str
    nodes: dict[int, M3Node]
    edges: list[tuple[int, int]]  # (a, b) for each key of M3-Agent's ``edges``; weights are not used


def _brief(value: Any) -> str:
    """A short description of an untrusted value for a message: never a deep or huge repr."""
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "...")
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        number = int(value)
        return str(number) if number.bit_length() <= 256 else f"an integer of {number.bit_length()} bits"
    if value is None or isinstance(value, bool | float):
        return repr(value)
    return f"a {type(value).__name__.lstrip('_')}"


def _node_id(value: Any) -> int | None:
    ok = type(value) is int or isinstance(value, np.integer)
    return int(value) if ok and 0 <= value < 2**63 else None


class _Checker:
    """Turns the loaded stubs into :class:`M3Graph`, charging every item read to the budget."""

    def __init__(self, path: Path, budget: _Budget) -> None:
        self.path, self.budget = path, budget

    def fail(self, node_id: int, field: str, cause: str) -> M3ImportError:
        return M3ImportError(f"{self.path}: node {node_id} field {field!r}: {cause}")

    def graph(self, raw: Any) -> M3Graph:
        if not isinstance(raw, _VideoGraph):
            raise M3ImportError(f"{self.path} does not hold an M3-Agent VideoGraph (it holds {_brief(raw)})")
        nodes, edges = vars(raw).get("nodes"), vars(raw).get("edges", {})
        edges = {} if edges is None else edges
        for name, value in (("nodes", nodes), ("edges", edges)):
            if not isinstance(value, dict):
                raise M3ImportError(f"{self.path}: VideoGraph.{name} is {_brief(value)}, not a dict")
        self.budget.charge(len(nodes) + len(edges))
        checked = {}
        for key, node in nodes.items():
            node_id = _node_id(key)
            if node_id is None:
                raise M3ImportError(f"{self.path}: node key {_brief(key)} is not a node id (an integer >= 0)")
            checked[node_id] = self.node(node_id, node)
        pairs = []
        for key in edges:
            pair = tuple(map(_node_id, key)) if type(key) is tuple and len(key) == 2 else (None,)
            if None in pair:
                raise M3ImportError(f"{self.path}: edge key {_brief(key)} is not a pair of node ids")
            pairs.append(pair)
        return M3Graph(str(self.path), checked, pairs)

    def node(self, node_id: int, node: Any) -> M3Node:
        if not isinstance(node, _Node):
            raise M3ImportError(f"{self.path}: node {node_id} is {_brief(node)}, not a VideoGraph.Node")
        fields = vars(node)
        kind = KINDS.get(fields.get("type")) if isinstance(fields.get("type"), str) else None
        if kind is None:
            raise self.fail(node_id, "type", f"{_brief(fields.get('type'))} is not one of {', '.join(KINDS)}")
        metadata = {} if fields.get("metadata") is None else fields["metadata"]
        if not isinstance(metadata, dict):
            raise self.fail(node_id, "metadata", f"{_brief(metadata)}, expected a dict")
        text = kind in ("episodic", "semantic")
        clip = None
        if text:
            clip = metadata.get("timestamp", 0)
            if _node_id(clip) is None or clip >= MAX_CLIP:
                raise self.fail(node_id, "metadata.timestamp",
                                f"{_brief(clip)} is not a clip number (an integer from 0 to {MAX_CLIP - 1:,})")
            clip = int(clip)
        contents = self.items(node_id, "metadata.contents", metadata.get("contents"))
        for i, item in enumerate(contents):
            if not isinstance(item, str if text else str | bytes):
                raise self.fail(node_id, f"metadata.contents[{i}]",
                                f"{_brief(item)}, expected {'a str' if text else 'a str or bytes'}")
            self.budget.charge(len(item))
        embeddings = [self.vector(node_id, i, v)
                      for i, v in enumerate(self.items(node_id, "embeddings", fields.get("embeddings")))]
        return M3Node(node_id, kind, clip, embeddings, contents)

    def items(self, node_id: int, field: str, value: Any) -> list:
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise self.fail(node_id, field, f"{_brief(value)}, expected a list")
        self.budget.charge(len(value))
        return list(value)

    def vector(self, node_id: int, i: int, value: Any) -> np.ndarray:
        field = f"embeddings[{i}]"
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            self.budget.charge(value.size)
            vec = value.astype(np.float32).reshape(-1)
        elif isinstance(value, list | tuple):
            self.budget.charge(len(value))
            try:  # fromiter never recurses: a nested item is an error, not a deeper array
                vec = np.fromiter(value, np.float32, len(value))
            except (TypeError, ValueError):
                raise self.fail(node_id, field, "not a list of numbers") from None
        else:
            raise self.fail(node_id, field, f"{_brief(value)}, expected a vector")
        if vec.size == 0 or not np.isfinite(vec).all():
            raise self.fail(node_id, field, "empty, or holds NaN or infinity")
        return vec


def _why(exc: BaseException) -> str:
    try:
        text = " ".join(str(exc).split())[:200]
    except Exception:  # a message that cannot even be printed
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_m3_pickle(path: str | Path) -> M3Graph:
    """Read and check an M3-Agent ``VideoGraph`` pickle; raises :class:`M3ImportError` (or its
    :class:`UnsafePickleError`) naming the file and the cause, for any file that is not one."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            data = f.read() if os.fstat(f.fileno()).st_size <= MAX_PICKLE_BYTES else None
    except OSError as exc:
        raise M3ImportError(f"cannot read {path}: {exc.strerror or _why(exc)}") from exc
    if data is None or len(data) > MAX_PICKLE_BYTES:
        raise M3ImportError(f"{path} is larger than {MAX_PICKLE_BYTES:,} bytes; refusing to load it")
    budget = _Budget(path, ITEMS_PER_BYTE * len(data) + 1_000_000)
    try:
        raw = _Unpickler(data, path, budget).load()
        return _Checker(path, budget).graph(raw)
    except M3ImportError:
        raise
    except Exception as exc:  # whatever a malformed file raises, RecursionError and MemoryError included
        raise M3ImportError(f"{path} is not a readable M3-Agent memory pickle: {_why(exc)}") from exc


# ------------------------------------------------------------------------------------ writing
class ClipWriter(Protocol):
    """The records of one clip, as the memory graph's clip batch takes them."""

    def face(self, embeddings: Sequence[np.ndarray], *, crops: Sequence[tuple[bytes, float | None]],
             meta: dict) -> int: ...

    def voice(self, embeddings: Sequence[np.ndarray], *, segments: Sequence[tuple[float, float, str]],
              meta: dict) -> int: ...

    def episodic(self, text: str) -> Any: ...

    def semantic(self, text: str) -> Any: ...


class ImportTarget(Protocol):
    """What :func:`import_m3_graph` needs of a memory graph (``MemoryGraph`` has it)."""

    def add_video(self, name: str, path: str | None = None, duration: float | None = None,
                  clip_seconds: float = DEFAULT_CLIP_SECONDS, meta: dict | None = None) -> int: ...

    def has_clip(self, video_id: int, clip: int) -> bool: ...

    def clip(self, video_id: int, clip: int, start: float, end: float) -> AbstractContextManager[ClipWriter]: ...


def _crop_bytes(item: str | bytes) -> bytes | None:
    if isinstance(item, bytes):
        return item
    try:
        return base64.b64decode(item, validate=True)
    except (binascii.Error, ValueError):
        return None


def import_m3_graph(src: M3Graph, graph: ImportTarget, video_name: str, *, clip_seconds: float = DEFAULT_CLIP_SECONDS,
                    video_path: str | None = None) -> dict:
    """Copy a checked M3-Agent graph (from :func:`load_m3_pickle`) into ``graph`` as video ``video_name``.

    ``graph`` is duck-typed (:class:`ImportTarget`): ``add_video(name, path=, duration=, clip_seconds=,
    meta=)``, ``has_clip(video_id, clip)`` and ``clip(video_id, clip, start, end)``, a context manager
    yielding a batch with ``face(embs, crops=, meta=)``, ``voice(embs, segments=, meta=)``,
    ``episodic(text)`` and ``semantic(text)``. A face or voice goes into the first clip whose text
    mentions it; clips already in ``graph`` are skipped, so re-running adds nothing. Text is re-embedded
    by the graph's embedder (M3-Agent's 3072-d API vectors do not match a local query embedder); empty
    lines are skipped and counted in ``empty_lines``.
    """
    nodes = src.nodes
    by_clip: dict[int, list[int]] = {}
    for node_id, node in sorted(nodes.items()):
        if node.clip is not None:
            by_clip.setdefault(node.clip, []).append(node_id)
    entity_clips: dict[int, int] = {}
    for a, b in src.edges:
        for ent, txt in ((a, b), (b, a)):
            if ent in nodes and nodes[ent].clip is None and txt in nodes and nodes[txt].clip is not None:
                clip = nodes[txt].clip
                entity_clips[ent] = min(entity_clips.get(ent, clip), clip)
    for ent, node in nodes.items():
        if node.clip is None:
            entity_clips.setdefault(ent, min(by_clip, default=0))
    last = max(by_clip, default=0)
    video_id = graph.add_video(video_name, path=video_path, duration=(last + 1) * clip_seconds,
                               clip_seconds=clip_seconds, meta={"imported_from": "m3-agent"})
    id_map: dict[int, int] = {}
    stats = {"video": video_name, "clips": 0, "faces": 0, "voices": 0, "lines": 0, "skipped_clips": 0,
             "empty_lines": 0}
    for clip in sorted(set(by_clip) | set(entity_clips.values())):
        if graph.has_clip(video_id, clip):
            stats["skipped_clips"] += 1
            for ent, first in entity_clips.items():
                if first == clip:
                    id_map.setdefault(ent, ent)
            continue
        with graph.clip(video_id, clip, clip * clip_seconds, (clip + 1) * clip_seconds) as batch:
            for ent in sorted(e for e, first in entity_clips.items() if first == clip):
                node = nodes[ent]
                if node.kind == "face":
                    crops = [(c, None) for c in map(_crop_bytes, node.contents) if c]
                    id_map[ent] = batch.face(node.embeddings, crops=crops, meta={"m3_id": ent})
                    stats["faces"] += 1
                else:
                    segs = [(clip * clip_seconds, (clip + 1) * clip_seconds, t) for t in node.contents
                            if isinstance(t, str)]
                    id_map[ent] = batch.voice(node.embeddings, segments=segs, meta={"m3_id": ent})
                    stats["voices"] += 1

            def remap(kind: str, number: int) -> str | None:
                return None if kind == "character" or number not in id_map else f"<{kind}_{id_map[number]}>"

            for text_id in by_clip.get(clip, []):
                node = nodes[text_id]
                write = batch.episodic if node.kind == "episodic" else batch.semantic
                for text in node.contents:
                    if not text.strip():
                        stats["empty_lines"] += 1
                        continue
                    write(rewrite_tags(text, remap))
                    stats["lines"] += 1
        stats["clips"] += 1
    return stats
