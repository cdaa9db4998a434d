"""Importing M3-Agent VideoGraph pickles: untrusted files give one clear error and never a partial import."""

import ast
import base64
import io
import json
import pickle
import sys
import time
import tracemalloc
import types
from pathlib import Path

import numpy as np
import pytest

import m3agent.memory.m3_import as m3_import
from m3agent.errors import M3AgentError
from m3agent.memory import MemoryGraph
from m3agent.memory.m3_import import (
    M3ImportError,
    UnsafePickleError,
    import_m3_graph,
    load_m3_pickle,
)


def _m3_classes():
    """Classes with M3-Agent's module path and field names, used only to write the pickle."""
    module = types.ModuleType("mmagent.videograph")

    class VideoGraph:
        class Node:
            def __init__(self, node_id, node_type):
                self.id, self.type, self.embeddings, self.metadata = node_id, node_type, [], {}

    VideoGraph.__module__ = VideoGraph.Node.__module__ = "mmagent.videograph"
    VideoGraph.__qualname__, VideoGraph.Node.__qualname__ = "VideoGraph", "VideoGraph.Node"
    module.VideoGraph = VideoGraph
    return module, VideoGraph


def _sample(VideoGraph):
    """Face 0, voice 1, and five text lines over clips 0 and 1, shaped like M3-Agent's output."""
    g = VideoGraph()
    g.nodes, g.edges, g.text_nodes, g.text_nodes_by_clip, g.event_sequence_by_clip = {}, {}, [], {}, {}
    rng = np.random.default_rng(0)

    def node(i, kind, **meta):
        n = VideoGraph.Node(i, kind)
        n.metadata = meta
        g.nodes[i] = n
        return n

    face = node(0, "img", contents=[base64.b64encode(b"\xff\xd8M3CROP").decode()])
    face.embeddings = [rng.standard_normal(512).astype(np.float32) for _ in range(2)]
    voice = node(1, "voice", contents=["hello there"])
    voice.embeddings = [rng.standard_normal(256)]
    texts = [(2, "episodic", 0, "<face_0> waves at the camera"), (3, "episodic", 0, "<voice_1> says hello there"),
             (4, "semantic", 0, "Equivalence: <face_0>, <voice_1>"), (5, "episodic", 1, "<face_0> leaves the room"),
             (6, "semantic", 1, "<face_0>'s name is Eve")]
    for i, kind, clip, text in texts:
        n = node(i, kind, contents=[text], timestamp=clip)
        n.embeddings = [list(rng.standard_normal(3072))]  # M3-Agent keeps the API's float lists
        g.text_nodes.append(i)
        g.text_nodes_by_clip.setdefault(clip, []).append(i)
        for ent in (0, 1):
            if f"_{ent}>" in text:
                g.edges[(i, ent)] = g.edges[(ent, i)] = 1.0
    g.next_node_id = 7
    return g


def _dumps(obj) -> bytes:
    """Protocol 4, as M3-Agent writes, but without frames so that a test can splice raw opcodes in."""
    out = io.BytesIO()
    pickler = pickle._Pickler(out, 4)
    pickler.framer.start_framing = lambda: None
    pickler.dump(obj)
    return out.getvalue()


def _splice(data: bytes, placeholder: str, opcodes: bytes) -> bytes:
    """Replace the opcode that pushes the short string ``placeholder`` by raw opcodes."""
    op = b"\x8c" + bytes([len(placeholder)]) + placeholder.encode()
    assert data.count(op) == 1
    return data.replace(op, opcodes)


def _nested_lists(depth: int) -> bytes:
    """Opcodes for [[[...]]] ``depth`` lists deep (pickle.dumps itself would hit the recursion limit)."""
    return b"]" * depth + b"a" * (depth - 1)


def _laughs():
    """A "billion laughs": 10**41 leaves behind 41 shared lists, a few hundred bytes pickled."""
    a = [1] * 10
    for _ in range(40):
        a = [a] * 10
    return a


@pytest.fixture
def m3(tmp_path, monkeypatch):
    """Makes sample graphs with M3-Agent's classes and writes them: ``m3.write(graph or bytes, name)``."""
    module, VideoGraph = _m3_classes()
    monkeypatch.setitem(sys.modules, "mmagent", types.ModuleType("mmagent"))
    monkeypatch.setitem(sys.modules, "mmagent.videograph", module)

    def write(obj, name="m3.pkl") -> Path:
        path = tmp_path / name
        path.write_bytes(obj if isinstance(obj, bytes) else _dumps(obj))
        return path

    return types.SimpleNamespace(VideoGraph=VideoGraph, sample=lambda: _sample(VideoGraph), write=write,
                                 dumps=_dumps)


@pytest.fixture
def m3_pickle(m3):
    return m3.write(m3.sample())


def _refused(path, match) -> M3ImportError:
    """Loading ``path`` fails with one line naming the file and matching ``match``."""
    with pytest.raises(M3ImportError, match=match) as info:
        load_m3_pickle(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    return info.value


def test_import_m3_pickle(m3_pickle, tmp_path, embedder, monkeypatch):
    monkeypatch.delitem(sys.modules, "mmagent.videograph")  # the loader must not need M3-Agent's code
    source = load_m3_pickle(m3_pickle)
    assert sorted(source.nodes) == list(range(7)) and source.nodes[5].clip == 1 and source.nodes[0].clip is None
    assert all(v.dtype == np.float32 and v.ndim == 1 for n in source.nodes.values() for v in n.embeddings)
    graph = MemoryGraph.open(tmp_path / "imported.db", embedder=embedder)
    stats = import_m3_graph(source, graph, "m3video")
    assert stats == {"video": "m3video", "clips": 2, "faces": 1, "voices": 1, "lines": 5, "skipped_clips": 0,
                     "empty_lines": 0}
    data = graph.export()
    kinds = sorted(n["kind"] for n in data["nodes"])
    assert kinds == ["episodic", "episodic", "episodic", "face", "semantic", "semantic", "voice"]
    assert list(data["characters"].values()) == [["face_0", "voice_1"]]
    assert data["names"] == {"character_0": "Eve"}
    assert graph.store.crops(0)[0][2] == b"\xff\xd8M3CROP"
    hit = graph.search("leaves the room", threshold=0.2).clips[0]
    assert hit.id == 1 and hit.lines[0] == "<character_0> leaves the room"
    again = import_m3_graph(source, graph, "m3video")  # re-running skips what is there
    assert again["skipped_clips"] == 2 and again["lines"] == 0
    graph.close()


def test_empty_lines_are_skipped_and_counted(m3, tmp_path, embedder):
    g = m3.sample()
    g.nodes[2].metadata["contents"] = ["", "   \n", "<face_0> sits down"]
    graph = MemoryGraph.open(tmp_path / "imported.db", embedder=embedder)
    stats = import_m3_graph(load_m3_pickle(m3.write(g)), graph, "m3video")
    assert stats["lines"] == 5 and stats["empty_lines"] == 2
    lines = [n.get("text") for n in graph.export()["nodes"]]
    assert "" not in lines and "   \n" not in lines
    graph.close()


def test_errors_are_project_errors():
    assert issubclass(M3ImportError, M3AgentError) and issubclass(UnsafePickleError, M3ImportError)
    assert not issubclass(M3ImportError, pickle.UnpicklingError | OSError)


def test_refuses_arbitrary_classes(tmp_path):
    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("echo pwned",))

    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(UnsafePickleError, match="posix.system|os.system"):
        load_m3_pickle(path)
    junk = tmp_path / "junk.pkl"
    junk.write_bytes(b"not a pickle")
    _refused(junk, "not a readable M3-Agent memory pickle")
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"nodes": {}}))
    _refused(plain, "VideoGraph")
    empty = tmp_path / "empty.pkl"
    empty.write_bytes(b"")
    _refused(empty, "not a readable")
    truncated = tmp_path / "truncated.pkl"
    truncated.write_bytes(pickle.dumps(list(range(100)))[:50])
    _refused(truncated, "not a readable")


def test_missing_or_unreadable_file(tmp_path):
    error = _refused(tmp_path / "missing.pkl", "cannot read .*No such file")
    assert not isinstance(error, OSError)
    _refused(tmp_path, "cannot read")  # a directory


def test_refuses_oversized_file(m3_pickle, monkeypatch):
    monkeypatch.setattr(m3_import, "MAX_PICKLE_BYTES", 1000)
    _refused(m3_pickle, "larger than 1,000 bytes")


def _set(node, field, value):
    def edit(g):
        target = g.nodes[node]
        if field.startswith("metadata."):
            target.metadata[field.removeprefix("metadata.")] = value
        else:
            setattr(target, field, value)

    return edit


def _rekey(old, new):
    def edit(g):
        g.nodes[new] = g.nodes.pop(old)

    return edit


@pytest.mark.parametrize("edit, match", [
    (_set(2, "metadata", ["x"]), r"node 2 field 'metadata': a list, expected a dict"),
    (_set(3, "metadata.timestamp", "noon"), r"node 3 field 'metadata.timestamp': 'noon' is not a clip number"),
    (_set(3, "metadata.timestamp", 10**30), r"node 3 field 'metadata.timestamp': 10{30} is not a clip number"),
    (_set(3, "metadata.timestamp", -1), r"node 3 field 'metadata.timestamp': -1 is not"),
    (_set(3, "metadata.timestamp", 2.5), r"node 3 field 'metadata.timestamp': 2.5 is not"),
    (_set(1, "type", "sound"), r"node 1 field 'type': 'sound' is not one of img, voice"),
    (_set(2, "metadata.contents", "one line"), r"node 2 field 'metadata.contents': 'one line', expected a list"),
    (_set(2, "metadata.contents", [42]), r"node 2 field 'metadata.contents\[0\]': 42, expected a str"),
    (_set(2, "metadata.contents", [b"bytes"]), r"node 2 field 'metadata.contents\[0\]': a bytes, expected a str"),
    (_set(0, "embeddings", [["a", "b"]]), r"node 0 field 'embeddings\[0\]': not a list of numbers"),
    (_set(0, "embeddings", [[]]), r"node 0 field 'embeddings\[0\]': empty"),
    (_set(0, "embeddings", [[1.0, float("nan")]]), r"node 0 field 'embeddings\[0\]': empty, or holds NaN"),
    (_set(0, "embeddings", 3), r"node 0 field 'embeddings': 3, expected a list"),
    (_rekey(4, "abc"), r"node key 'abc' is not a node id"),
    (_rekey(4, -4), r"node key -4 is not a node id"),
    (_rekey(4, 4.0), r"node key 4.0 is not a node id"),
    (lambda g: g.nodes.__setitem__(4, {"type": "semantic"}), r"node 4 is a dict, not a VideoGraph.Node"),
    (lambda g: setattr(g, "nodes", list(g.nodes.values())), r"VideoGraph.nodes is a list, not a dict"),
    (lambda g: g.edges.__setitem__((1, 2, 3), 1.0), r"edge key a tuple is not a pair of node ids"),
    (lambda g: g.edges.__setitem__(("a", 2), 1.0), r"edge key a tuple is not a pair of node ids"),
])
def test_refuses_bad_fields(m3, edit, match):
    g = m3.sample()
    edit(g)
    _refused(m3.write(g), match)


def test_refuses_numpy_objects_beyond_plain_numbers(m3):
    g = m3.sample()
    g.nodes[0].embeddings = [np.array([1.0, None], dtype=object)]  # an object array may hold anything
    _refused(m3.write(g), "refusing numpy dtype 'O8?'")
    g.nodes[0].embeddings = [np.zeros(3, dtype=[("a", "f4"), ("b", "i4")])]
    _refused(m3.write(g), "refusing numpy dtype")


def test_deeply_nested_node(m3):
    """100 000 nested lists: a RecursionError (or a crash) in naive code, one clear error here."""
    g = m3.sample()
    g.nodes[2].metadata["contents"] = ["DEEP"]
    data = _splice(m3.dumps(g), "DEEP", _nested_lists(100_000))
    _refused(m3.write(data), r"node 2 field 'metadata.contents\[0\]': a list, expected a str")
    g = m3.sample()
    g.nodes[0].embeddings = ["DEEP"]
    data = _splice(m3.dumps(g), "DEEP", _nested_lists(100_000))
    _refused(m3.write(data), r"node 0 field 'embeddings\[0\]': not a list of numbers")
    g.nodes[0].embeddings = []
    g.nodes[0].metadata = "DEEP"
    data = _splice(m3.dumps(g), "DEEP", _nested_lists(100_000))
    _refused(m3.write(data), r"node 0 field 'metadata': a list, expected a dict")
    _refused(m3.write(b"\x80\x04" + _nested_lists(100_000) + b"."), "does not hold an M3-Agent VideoGraph")


def test_deeply_nested_tuple_does_not_crash(tmp_path):
    """Hashing a tuple a million deep overflows the C stack: refused while it is being built."""
    path = tmp_path / "tuple.pkl"
    path.write_bytes(b"\x80\x02}N" + b"\x85" * 1_000_000 + b"Ns.")  # {((((None,),),)...): None}
    _refused(path, "tuples nested more than 100 deep")


class _Bounded:
    """Asserts a block stays within a time and a memory (traced Python and numpy allocations) limit."""

    def __init__(self, seconds=10.0, megabytes=200):
        self.seconds, self.megabytes = seconds, megabytes

    def __enter__(self):
        tracemalloc.start()
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        elapsed = time.perf_counter() - self.start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert elapsed < self.seconds and peak < self.megabytes * 2**20, (elapsed, peak)


@pytest.mark.parametrize("where", ["contents", "embeddings", "metadata", "edges", "unused"])
def test_billion_laughs(m3, embedder, tmp_path, where):
    g = m3.sample()
    if where == "contents":
        g.nodes[2].metadata["contents"] = _laughs()
    elif where == "embeddings":
        g.nodes[0].embeddings = _laughs()
    elif where == "metadata":
        g.nodes[2].metadata = _laughs()
    elif where == "edges":
        g.edges = _laughs()
    else:  # a field the import never reads costs nothing
        g.text_nodes_by_clip = _laughs()
    path = m3.write(g)
    assert path.stat().st_size < len(m3.dumps(m3.sample())) + 4000  # 10**41 leaves in a few KB
    with _Bounded():
        if where == "unused":
            source = load_m3_pickle(path)
        else:
            _refused(path, "field|edges")
    if where == "unused":
        graph = MemoryGraph.open(tmp_path / "imported.db", embedder=embedder)
        assert import_m3_graph(source, graph, "m3video")["lines"] == 5
        graph.close()


def test_shared_references_that_expand_are_refused(m3):
    """Each line is well-formed, but 2 000 nodes share one list of 10 000 strings of 1 000 chars."""
    g = m3.sample()
    lines = ["x" * 1000] * 10_000
    for i in range(100, 2100):
        node = m3.VideoGraph.Node(i, "episodic")
        node.metadata = {"contents": lines, "timestamp": 0}
        g.nodes[i] = node
    path = m3.write(g)
    with _Bounded():
        _refused(path, r"expands to more than [\d,]+ items \(shared references\?\)")


def test_copies_made_while_loading_are_budgeted(tmp_path):
    """list(a) called 100 000 times on one 100 000-item list: 10**10 items from a 1 MB file."""
    n = 100_000
    data = (b"\x80\x02cbuiltins\nlist\nq\x00]q\x01(" + b"K\x00" * n + b"e"  # list; a = [0] * n
            + b"](" + b"h\x00h\x01\x85R" * n + b"e.")  # [list(a), list(a), ...]
    path = tmp_path / "copies.pkl"
    path.write_bytes(data)
    with _Bounded():
        _refused(path, r"expands to more than [\d,]+ items")


def test_forged_memo_index(tmp_path):
    """The C unpickler grows its memo to a forged index: 10 bytes that would allocate 32 GB."""
    path = tmp_path / "memo.pkl"
    path.write_bytes(b"\x80\x02]r\xff\xff\xff\x7f.")
    with _Bounded():
        _refused(path, "does not hold an M3-Agent VideoGraph")


@pytest.mark.parametrize("opcodes, match", [
    (b"\x80\x02cnumpy\nndarray\nK\x00\x85\x81.", "not a readable"),  # ndarray.__new__(ndarray, shape)
    (b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nJ\x00\xe1\xf5\x05\x85U\x01b\x87R.",
     "unexpected numpy array reconstruction"),  # an empty array of 10**8 items
    (b"\x80\x02cbuiltins\nlist\n}b.", "refusing to set the state of a type"),  # BUILD on a class
])
def test_refuses_numpy_and_build_tricks(tmp_path, opcodes, match):
    path = tmp_path / "trick.pkl"
    path.write_bytes(opcodes)
    _refused(path, match)


def test_cli_reports_a_bad_pickle_in_one_line_and_writes_nothing(m3, tmp_path, capsys):
    from m3agent.cli import main

    g = m3.sample()
    g.nodes[3].metadata["timestamp"] = "noon"
    db = tmp_path / "x.db"
    assert main(["import-m3", str(m3.write(g, "bad.pkl")), str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "bad.pkl" in err and "node 3 field 'metadata.timestamp'" in err
    assert not db.exists()


def test_does_not_import_the_memory_graph_facade():
    """A part never imports the facade that composes it: the import target is duck-typed."""
    tree = ast.parse(Path(m3_import.__file__).read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {"m3agent.memory", "m3agent.memory.graph"} & names


@pytest.mark.parametrize("case", ["metadata-list", "noon", "huge-timestamp", "key-abc", "deep", "laughs"])
def test_cli_exits_2_with_one_line_for_each_reported_case(m3, tmp_path, capsys, case):
    from m3agent.cli import main

    g = m3.sample()
    if case == "metadata-list":
        g.nodes[2].metadata = ["x"]
    elif case == "noon":
        g.nodes[3].metadata["timestamp"] = "noon"
    elif case == "huge-timestamp":
        g.nodes[3].metadata["timestamp"] = 10**30
    elif case == "key-abc":
        g.nodes["abc"] = g.nodes.pop(4)
    elif case == "laughs":
        g.nodes[2].metadata["contents"] = _laughs()
    elif case == "deep":
        g.nodes[2].metadata["contents"] = ["DEEP"]
    path = m3.write(g, f"{case}.pkl")
    if case == "deep":
        path = m3.write(_splice(m3.dumps(g), "DEEP", _nested_lists(100_000)), "deep.pkl")
    assert main(["--set", "embedder.backend=hashing", "import-m3", str(path), str(tmp_path / "x.db")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("m3agent import-m3: error: ") and path.name in err
    assert "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "x.db").exists()


def test_cli_on_a_full_disk_says_so_names_the_db_and_resumes(m3_pickle, tmp_path, capsys, monkeypatch):
    from m3agent.cli import main
    from m3agent.memory.store import SQLiteStore

    opened = SQLiteStore.__init__

    def on_a_full_disk(self, *args, **kwargs):
        opened(self, *args, **kwargs)
        self.conn.execute(f"PRAGMA max_page_count = {self.conn.execute('PRAGMA page_count').fetchone()[0]}")

    db = tmp_path / "full.db"
    argv = ["--set", "embedder.backend=hashing", "import-m3", str(m3_pickle), str(db)]
    with monkeypatch.context() as patch:
        patch.setattr(SQLiteStore, "__init__", on_a_full_disk)
        assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{db}: disk full" in err
    assert main(argv) == 0  # space again: the same command finishes the import
    assert json.loads(capsys.readouterr().out)["clips"] == 2
