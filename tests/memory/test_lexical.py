"""BM25 from the DB's FTS5 index: tokenizing like FTS5, the cost budget, scoping, and old DBs."""

import sqlite3

import numpy as np

from m3agent.memory import MemoryGraph
from m3agent.memory.lexical import LexicalIndex, match_expression, terms
from m3agent.memory.store import SCHEMA_VERSION, SQLiteStore


def test_terms_fold_case_and_accents_and_drop_tags_and_stopwords():
    assert terms("Where did <face_3> meet Zoë in São-Paulo, the CAFÉ?") == ["meet", "zoe", "sao", "paulo", "cafe"]
    assert terms("the of and") == []
    assert terms("北京 café") == ["北京", "cafe"]


def test_query_syntax_in_a_question_is_just_words(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        video = graph.add_video("v")
        with graph.clip(video, 0, 0, 30) as b:
            b.episodic('he said "NEAR" AND OR NOT * ^ near the door')
        expression = match_expression(terms('NEAR("door" AND OR * ^col:x'))
        assert expression == '"near" OR "door" OR "col" OR "x"'
        assert match_expression(['a"b']) == '"a""b"'
        found = graph.store.lexical_search(expression, None, 5)  # FTS5 syntax in a query is no syntax error
        assert [i for i, _ in found] == [graph.store.text_nodes(video)[0].id]


def fill(graph, n_lines=40):
    video = graph.add_video("v")
    ids = []
    for clip in range(n_lines // 10):
        with graph.clip(video, clip, clip * 30, clip * 30 + 30) as b:
            for i in range(10):
                word = " zebra" if clip * 10 + i in (7, 23) else ""
                ids.append(b.episodic(f"common line {clip * 10 + i}{word}"))
    return video, ids


def test_rarest_words_first_within_the_budget(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        _, ids = fill(graph)
        lexical = LexicalIndex(graph.store, postings=10)
        assert lexical.documents(["common", "zebra", "absent"]) == {"common": 40, "zebra": 2, "absent": 0}
        assert lexical.choose(["common", "zebra", "absent"], 1.0) == ["zebra"]
        assert lexical.choose(["common", "zebra"], 0.1) == ["zebra", "common"]  # a quarter of the lines in scope
        found = lexical.search("common zebra", None, 1.0, 10)
        assert [i for i, _ in found] == [ids[7], ids[23]]
        assert found[0][1] > 0
        assert LexicalIndex(graph.store, postings=1).search("common zebra", None, 1.0, 10) == []


def test_id_ranges_scope_the_search(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        _, ids = fill(graph)
        found = graph.store.lexical_search('"zebra"', [(ids[20], ids[39])], 10)
        assert [i for i, _ in found] == [ids[23]]


def test_counts_follow_the_memory_as_it_grows(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        video, _ = fill(graph)
        assert graph.search("zebra", lines=5).lines  # fills the per-term cache
        with graph.clip(video, 9, 270, 300) as b:
            new = b.episodic("a zebra crossing")
        assert new in [line["node"] for line in graph.search("zebra", lines=5).lines]


def make_schema_1(path):
    """A DB as schema 1 wrote it: no records table, no lexical index."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE lines_fts")
    conn.execute("DROP TABLE records")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
    conn.commit()
    conn.close()


def test_a_schema_1_db_is_upgraded_on_first_write_open_and_searched_read_only_before(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        fill(graph)
    make_schema_1(db_path)
    with MemoryGraph.open(db_path, embedder=embedder, readonly=True) as old:
        assert not old.store.has_lexical
        result = old.search("zebra", lines=3, threshold=0.0)
        assert result.lines and all(line["lexical"] == 0 for line in result.lines)  # vectors only
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        assert graph.store.meta()["schema"] == str(SCHEMA_VERSION)
        hits = graph.search("zebra", lines=2).lines
        assert [h["lexical"] > 0 for h in hits] == [True, True]
    assert SQLiteStore(db_path, readonly=True).has_records


def test_rewritten_and_deleted_lines_leave_the_index(db_path, embedder):
    with MemoryGraph.open(db_path, embedder=embedder) as graph:
        _, ids = fill(graph)
        store = graph.store
        with store.transaction():
            store.update_text(ids[7], "common line 7 giraffe", np.ones(512, np.float32) / np.sqrt(512))
            store.delete_nodes([ids[23]])
        assert store.term_documents(["zebra", "giraffe"]) == {"zebra": 0, "giraffe": 1}
        assert [i for i, _ in store.lexical_search('"giraffe"', None, 5)] == [ids[7]]
