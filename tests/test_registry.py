import pytest

from m3agent import factory, registry
from m3agent.config import EmbedderConfig


def test_backends_are_found_by_name_and_built_from_their_config_section():
    assert "sentence-transformers" in registry.available("embedder")
    embedder = factory.build_embedder(EmbedderConfig(backend="hashing", model="16"))
    assert embedder.embed(["a b"]).shape == (1, 16)
    direct = factory.build_embedder(EmbedderConfig(backend="m3agent.models.embed.hashing:HashingEmbedder", model="8"))
    assert direct.dim == 8
    with pytest.raises(registry.UnknownBackendError, match="known: hashing, sentence-transformers"):
        registry.load_class("embedder", "nope")
    with pytest.raises(registry.UnknownBackendError, match="cannot import"):
        registry.load_class("embedder", "no_such_module:Thing")


def test_a_name_is_registered_once(monkeypatch):
    monkeypatch.setitem(registry._BACKENDS, "embedder", dict(registry._BACKENDS["embedder"]))
    registry.register("embedder", "mine", "m3agent.models.embed.hashing:HashingEmbedder")
    assert factory.build_embedder(EmbedderConfig(backend="mine", model="4")).dim == 4
    with pytest.raises(registry.DuplicateBackendError, match="'mine' is already registered"):
        registry.register("embedder", "mine", "other.module:Other")
    with pytest.raises(registry.DuplicateBackendError):
        registry.register("embedder", "hashing", "other.module:Other")
    with pytest.raises(registry.DuplicateBackendError):
        registry.register("chat", "auto", "other.module:Other")


def test_no_kind_is_registered_that_nothing_builds():
    import ast
    from pathlib import Path

    import m3agent

    source = "\n".join(p.read_text() for p in Path(m3agent.__file__).parent.rglob("*.py"))
    built = {node.args[0].value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in
             ("_build", "load_class", "check_name") and node.args and isinstance(node.args[0], ast.Constant)}
    assert set(registry._BACKENDS) <= built
