"""The user's cache folder for what m3agent builds once and reuses (the demo's episode, merged models)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$M3AGENT_CACHE``, else ``$XDG_CACHE_HOME/m3agent``, else ``~/.cache/m3agent`` (read at call time)."""
    if os.environ.get("M3AGENT_CACHE"):
        return Path(os.environ["M3AGENT_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "m3agent"
