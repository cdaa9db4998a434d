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
