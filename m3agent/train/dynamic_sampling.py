"""DAPO's dynamic sampling: a GRPO step trains only on groups whose episodes did not all score alike.

GRPO's advantage is an episode's reward against its group's mean, so a group whose episodes all got the same
reward (every answer right, or every answer wrong, the usual case with a binary judge) adds nothing to the step's
gradient: the step is spent on the groups left. With two questions a step, a step often has none (the CPU runs'
curves swing between 0 and 1). DAPO (Yu et al., 2025, the recipe M3-Agent trained with) over-samples and keeps
only groups with a spread; here, up to a budget a step, a flat group is replaced by a fresh question's group,
drawn with a seeded random generator (a resumed run redraws what the first drew). The step's log keeps the first
draw's accuracy (an unbiased look at the policy) and says how many groups taught something.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from m3agent.train.rollouts import Rollout


def has_spread(group: Sequence[Rollout]) -> bool:
    """Whether ``group``'s rewards differ, so its advantages are not all zero."""
    return len({round(r.reward, 9) for r in group}) > 1


@dataclass
class Resampled:
    """What one step trains on, and how it got there."""

    episodes: list[Rollout]
    first: list[Rollout]  # the step's own draw, before any group was replaced
    redrawn: int  # fresh groups sampled
    spread_drawn: int  # groups of the step's own draw whose rewards differ
    spread_kept: int  # groups of ``episodes`` whose rewards differ (what the step learns from)


def resample_flat_groups(episodes: list[Rollout], generations: int, budget: int,
                         play: Callable[[dict[str, Any]], list[Rollout]], pool: Sequence[dict[str, Any]],
                         rng: random.Random) -> Resampled:
    """``episodes`` (groups of ``generations`` consecutive episodes) with each flat group replaced by the group
    ``play(task)`` gives for a task drawn from ``pool``, until it has a spread or ``budget`` groups were drawn this
    step; a group still flat when the budget runs out is kept (TRL expects as many episodes as it asked for)."""
    if generations < 1 or len(episodes) % generations:
        raise ValueError(f"{len(episodes)} episodes are not groups of {generations}")
    groups = [episodes[i:i + generations] for i in range(0, len(episodes), generations)]
    drawn = sum(has_spread(g) for g in groups)
    redrawn = 0
    for k, group in enumerate(groups):
        while not has_spread(group) and redrawn < budget and pool:
            fresh = play(rng.choice(pool))
            redrawn += 1
            if len(fresh) != generations:
                raise ValueError(f"a fresh group has {len(fresh)} episodes, not {generations}")
            group = fresh
        groups[k] = group
    kept = [episode for group in groups for episode in group]
    return Resampled(kept, list(episodes), redrawn, drawn, sum(has_spread(g) for g in groups))
