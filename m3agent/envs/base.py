"""The environment contract (see :mod:`m3agent.envs`); environments are built by name in :mod:`m3agent.factory`."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

from m3agent.errors import M3AgentError


class EnvError(M3AgentError):
    """An environment used out of order (a step after ``done``, before ``reset``) or given a bad task."""


@dataclass
class StepResult:
    observation: list[dict]  # the messages the policy reads next (the whole conversation so far)
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


class Env(abc.ABC):
    """One episode at a time. ``observation`` is always the full message list: a driver that keeps
    its own token history (verl's agent loop) sends only the messages added since its last step,
    which :meth:`new_messages` gives."""

    name: str = "env"

    @abc.abstractmethod
    def reset(self, task: dict[str, Any]) -> list[dict]:
        """Start an episode on ``task`` (a dataset row's fields); returns the first observation."""

    @abc.abstractmethod
    def step(self, action: str) -> StepResult:
        """Apply the policy's reply; the reward is 0 until the step that ends the episode, unless the
        environment shapes it."""

    @property
    @abc.abstractmethod
    def messages(self) -> list[dict]:
        """The conversation so far (system, user, assistant, tool results)."""

    def new_messages(self, seen: int) -> list[dict]:
        """Messages after the first ``seen``: what a step added for the policy to read."""
        return self.messages[seen:]
