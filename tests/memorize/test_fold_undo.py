"""The memorizer undoes a fold the next clip contradicts, and matches against both nodes again."""

import numpy as np

from m3agent.config import MemoryConfig
from m3agent.memorize.pipeline import _undo_contradicted_folds
from m3agent.memory import MemoryGraph
from m3agent.memory.model import NodeKind
from m3agent.perception.identity import IdentityBank, cosine_distance
from tests.conftest import rand_vec
from tests.memory.test_identity_check import _two_speakers_folded


def test_the_bank_matches_both_nodes_after_an_undo(db_path, embedder):
    graph = MemoryGraph.open(db_path, MemoryConfig(), embedder=embedder)
    video, _, marcus, stranger, _ = _two_speakers_folded(graph)
    bank = IdentityBank(0.4, cosine_distance, graph.entity_snapshots(NodeKind.VOICE, video), linkage="average")
    assert set(bank.snapshots) == {marcus}
    _undo_contradicted_folds(graph, video, bank)  # nothing contradicts the fold: the bank is as it was
    assert set(bank.snapshots) == {marcus}
    with graph.clip(video, 2, 60, 90) as b:
        felix_face = b.face([rand_vec(4, 128)])
        b.voice([rand_vec(5, 256)], node_id=marcus, segments=[(61.0, 64.0, "I am Felix")])
        b.semantic(f"Equivalence: <face_{felix_face}>, <voice_{marcus}>")
        b.semantic(f"<voice_{marcus}>'s name is Felix")
    _undo_contradicted_folds(graph, video, bank)
    (new,) = set(bank.snapshots) - {marcus}
    stranger_voice = rand_vec(3, 256)[None]  # the folded-away speaker's voice is closer to its own node again
    assert bank.gap(stranger_voice, new) < bank.gap(stranger_voice, marcus)
    assert np.allclose(bank.snapshots[marcus], rand_vec(2, 256)[None], atol=1e-6)  # Marcus keeps only his own
    assert len(bank.snapshots[new]) == 2
    graph.close()
