"""What every verl worker process shares: the m3agent config, the memories it opens and the reward.

verl builds a new agent loop for every trajectory and loads tools once per worker; memories (read-only
SQLite graphs with their embedder) and the judge are far too costly for either, so they live here, one
set per process and m3agent configuration. The configuration comes from the trainer config's ``m3agent``
section (``config``: an m3agent TOML file or null, ``overrides``: ``key.path=value`` strings, as
``m3agent --set`` takes) plus ``M3AGENT__*`` environment variables, exactly as the CLI reads it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from m3agent.config import Config, load_config
from m3agent.eval.rewards import Rewarder
from m3agent.factory import build_rewarder
from m3agent.train.tasks import MemoryShelf


@dataclass
class Runtime:
    config: Config
    shelf: MemoryShelf
    rewarder: Rewarder


def settings(section: Mapping[str, Any] | None) -> tuple[str | None, tuple[str, ...]]:
    """``(config file, overrides)`` from an ``m3agent`` section (a dict or an OmegaConf node), hashable."""
    section = section or {}
    overrides = section.get("overrides") or ()
    return section.get("config") or None, tuple(str(item) for item in overrides)


@functools.lru_cache(maxsize=8)
def _runtime(path: str | None, overrides: tuple[str, ...]) -> Runtime:
    config = load_config(path, os.environ, overrides)
    return Runtime(config, MemoryShelf(config), build_rewarder(config.train.reward))


def runtime(section: Mapping[str, Any] | None = None, overrides: Sequence[str] = ()) -> Runtime:
    """The process's runtime for this configuration (built on first use)."""
    path, listed = settings(section)
    return _runtime(path, listed + tuple(overrides))
