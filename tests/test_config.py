import pytest

from m3agent.config import Config, ConfigError, load_config


def test_defaults_file_env_and_overrides_layer(tmp_path):
    assert load_config() == Config()
    toml = tmp_path / "m3.toml"
    toml.write_text('[memory.search]\ntop_k = 4\nthreshold = 0.3\n[embedder]\nbatch_size = 8\n')
    env = {"M3AGENT__MEMORY__SEARCH__TOP_K": "6", "UNRELATED": "x"}
    cfg = load_config(toml, env, ["memory.index.ann_threshold=500"])
    assert cfg.memory.search.top_k == 6 and cfg.memory.search.threshold == 0.3
    assert cfg.embedder.batch_size == 8 and cfg.memory.index.ann_threshold == 500


def test_bad_keys_and_values_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="unknown config key 'memory.serch'"):
        load_config(overrides=["memory.serch.top_k=1"])
    with pytest.raises(ConfigError, match="expected int"):
        load_config(overrides=["memory.search.top_k=many"])
    with pytest.raises(ConfigError, match="key.path=value"):
        load_config(overrides=["memory.search.top_k"])
    bad = tmp_path / "bad.toml"
    bad.write_text("[memory\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(bad)


def test_backend_names_are_checked_when_the_config_loads():
    from m3agent.registry import UnknownBackendError

    with pytest.raises(UnknownBackendError, match="control.chat.backend: unknown chat backend 'nope'; known: .*openai"):
        load_config(overrides=["control.chat.backend=nope"])
    with pytest.raises(UnknownBackendError, match="memorize.perception.face_backend"):
        load_config(env={"M3AGENT__MEMORIZE__PERCEPTION__FACE_BACKEND": "retina"})
    with pytest.raises(UnknownBackendError, match="embedder.backend"):
        load_config(overrides=["embedder.backend=word2vec"])
    # the aliases, an empty optional backend and a user's own module:Class are accepted
    cfg = load_config(overrides=["control.chat.backend=auto", "memorize.perception.asr_backend=",
                                 "embedder.backend=my_pkg.embed:MyEmbedder"])
    assert cfg.memorize.perception.asr_backend == "" and cfg.embedder.backend == "my_pkg.embed:MyEmbedder"
