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
    with pytest.raises(UnknownBackendError, match="text_backend: unknown text backend 'tesseract'; known: rapidocr"):
        load_config(overrides=["memorize.perception.text_backend=tesseract"])


@pytest.mark.parametrize("data, message", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"line 1 is not UTF-8 text \(byte 0x89\)"),
    ('[control]\nbatch_size = 3  # caf\xe9\n'.encode("latin-1"), r"line 2 is not UTF-8 text \(byte 0xe9\)"),
    (b"[memory\n", "not valid TOML"),
    (b"top_k = \x00\n", "not valid TOML"),
])
def test_config_files_that_are_not_toml_are_clear_errors(tmp_path, data, message):
    path = tmp_path / "m3.toml"
    path.write_bytes(data)
    with pytest.raises(ConfigError, match=f"cannot read config file {path}: {message}"):
        load_config(path)


def test_config_file_missing_a_folder_a_bom_and_errors_naming_the_file(tmp_path):
    with pytest.raises(ConfigError, match=f"cannot read config file {tmp_path}/none.toml: No such file"):
        load_config(tmp_path / "none.toml")
    with pytest.raises(ConfigError, match="cannot read config file .*: Is a directory"):
        load_config(tmp_path)
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf[memory.search]\ntop_k = 4\n")  # as Windows editors save it
    assert load_config(bom).memory.search.top_k == 4
    bom.write_text("[memory.search]\ntop_kk = 4\n")
    with pytest.raises(ConfigError, match=f"{bom}: unknown config key 'memory.search.top_kk'"):
        load_config(bom)


@pytest.mark.parametrize("override, message", [
    ("memorize.perception.fps=0", r"memorize.perception.fps must be > 0 \(got 0\)"),
    ("memorize.perception.text_min_score=1.5", r"text_min_score must be <= 1 \(got 1.5\)"),
    ("memorize.perception.text_frames=-1", r"text_frames must be >= 0 \(got -1\)"),
    ("memorize.perception.text_detect_side=0", r"text_detect_side must be > 0"),
    ("memorize.perception.asr_beam_size=0", r"asr_beam_size must be > 0 \(got 0\)"),
    ("memorize.perception.clip_seconds=0", r"memorize.perception.clip_seconds must be > 0 \(got 0\)"),
    ("memorize.perception.clip_seconds=-30", r"clip_seconds must be > 0 \(got -30\)"),
    ("memorize.perception.fps=nan", r"memorize.perception.fps must be a finite number \(got nan\)"),
    ("memorize.perception.fps=inf", r"fps must be a finite number \(got inf\)"),
    ("memory.search.threshold=-inf", r"memory.search.threshold must be a finite number"),
    ("memory.search.top_k=0", r"memory.search.top_k must be > 0 \(got 0\)"),
    ("memory.search.line_top_k=-1", r"memory.search.line_top_k must be > 0"),
    ("control.batch_size=0", r"control.batch_size must be > 0"),
    ("control.max_rounds=0", r"control.max_rounds must be > 0"),
    ("control.temperature=-0.5", r"control.temperature must be >= 0 \(got -0.5\)"),
    ("control.chat.timeout=0", r"control.chat.timeout must be > 0"),
    ("control.chat.retries=-1", r"control.chat.retries must be >= 0"),
    ("memorize.chat.gpu_memory=1.5", r"memorize.chat.gpu_memory must be <= 1 \(got 1.5\)"),
    ("memory.index.target_recall=2", r"memory.index.target_recall must be <= 1"),
    ("embedder.batch_size=0", r"embedder.batch_size must be > 0"),
    ("memory.search.top_k=1.5", "expected int"),
])
def test_numbers_are_checked_naming_the_setting(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(overrides=[override])


@pytest.mark.parametrize("toml, message", [
    ("[memory.search]\ntop_k = 1.5\n", r"memory.search.top_k: expected int, got 1.5"),
    ("[memory.search]\ntop_k = true\n", r"memory.search.top_k: expected int, got True"),
    ("[memory.search]\ntop_k = inf\n", r"memory.search.top_k: expected int, got inf"),
    ("[memorize.perception]\nfps = nan\n", r"memorize.perception.fps must be a finite number"),
    ("[memorize.perception]\nfps = false\n", r"memorize.perception.fps: expected float, got False"),
])
def test_toml_values_of_the_wrong_kind_are_not_bent_into_shape(tmp_path, toml, message):
    path = tmp_path / "m3.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_numbers_that_may_be_zero_or_negative_stay_allowed():
    cfg = load_config(overrides=["memory.search.threshold=-0.2", "control.chat.seed=-1", "control.temperature=0",
                                 "memory.index.nprobe=0", "control.chat.threads=0", "memorize.perception.fps=0.5",
                                 "memory.search.top_k=2.0"])
    assert cfg.memory.search.threshold == -0.2 and cfg.control.chat.seed == -1 and cfg.memory.search.top_k == 2
