import pytest

from m3agent import registry


def test_lazy_registry_and_user_backends():
    assert "sentence-transformers" in registry.available("embedder")
    cls = registry.load_class("embedder", "hashing")
    assert cls(dim=16).embed(["a b"]).shape == (1, 16)
    registry.register("embedder", "mine", "m3agent.models.embed.hashing:HashingEmbedder")
    assert registry.create("embedder", "mine", dim=8).dim == 8
    assert registry.load_class("vector_index", "m3agent.memory.index.flat:FlatIndex").__name__ == "FlatIndex"
    with pytest.raises(registry.UnknownBackendError, match="known: "):
        registry.load_class("embedder", "nope")
