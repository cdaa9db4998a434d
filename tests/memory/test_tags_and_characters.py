from m3agent.memory.characters import Equivalence, build_characters, name_statement
from m3agent.memory.model import NodeKind
from m3agent.memory.tags import entity_ids, parse_tags, rewrite_tags, rewrite_tags_many


def test_rewrite_is_anchored():
    text = "<face_1> meets <face_10> and <face_1> again; <voice_11> speaks"
    out = rewrite_tags(text, {"face_1": "<character_1>"})
    assert out == "<character_1> meets <face_10> and <character_1> again; <voice_11> speaks"
    assert rewrite_tags("< Face_3 > waves", {}) == "<face_3> waves"
    assert parse_tags("<character_2> and <voice_5>") == [("character", 2), ("voice", 5)]
    assert entity_ids("<face_3> <voice_4> <face_3> <character_9>") == [3, 4]


def test_union_find_and_voting():
    kinds = {1: NodeKind.FACE, 2: NodeKind.FACE, 3: NodeKind.VOICE, 4: NodeKind.FACE, 5: NodeKind.VOICE}
    eqs = [Equivalence(10, (1, 3), {1: 1, 3: 1}), Equivalence(11, (2, 3), {2: 3, 3: 3}),
           Equivalence(12, (1, 4), {1: 1, 4: 1})]
    cmap = build_characters(kinds, eqs)
    assert cmap.members == {1: [1, 4], 2: [2, 3], 5: [5]}
    assert cmap.translate("<voice_3> talks to <face_4> about <face_99>") == (
        "<character_2> talks to <character_1> about <face_99>")
    assert sorted(cmap.expand("where is <character_2>?")) == ["where is <face_2>?", "where is <voice_3>?"]
    assert cmap.as_tags() == {"character_1": ["face_1", "face_4"], "character_2": ["face_2", "voice_3"],
                              "character_5": ["voice_5"]}


def test_name_statements():
    assert name_statement("<face_3>'s name is Alice.") == ("face", 3, "Alice")
    assert name_statement("The name of <voice_2> is Bob Smith") == ("voice", 2, "Bob Smith")
    assert name_statement("<face_1> is called Dr. Who") == ("face", 1, "Dr")
    assert name_statement("<face_1> likes names") is None


def test_many_texts_rewritten_in_one_pass_as_one_by_one():
    texts = ["<face_1> waves", "no tags here", "<voice_10> and < Face_1 > talk", "", "a tag cut <face_", "1> apart",
             "ends with <"]
    table = {"face_1": "<character_1>", "voice_10": "<character_1>"}
    assert rewrite_tags_many(texts, table) == [rewrite_tags(t, table) for t in texts]
    assert rewrite_tags_many(texts, table)[4:6] == ["a tag cut <face_", "1> apart"]  # never joined into a tag
    odd = ["<face_1>\x00<face_1>", "<face_1>"]  # a text holding the separator: rewritten one by one
    assert rewrite_tags_many(odd, table) == ["<character_1>\x00<character_1>", "<character_1>"]
    assert rewrite_tags_many([], table) == [] and rewrite_tags_many(["plain"], table) == ["plain"]
