"""``compute_score`` for verl's ``reward.custom_reward_function``: the control reward from decoded text.

Rows run by the ``m3agent_control`` agent loop already carry their reward (the env computes it, with every
shaping term) and never reach this function. verl loads it by path: the repository root must be on
``PYTHONPATH`` (``launch.sh`` sets it). It serves the other ways verl may score a row: the built-in
``tool_agent`` loop with ``search_tool.py``, a single-turn baseline, or a re-scoring of saved rollouts.
From the decoded response it takes the last answer (:func:`m3agent.eval.rewards.final_answer`), replaces
character ids by the names the row's memory knows (as ``m3agent ask`` does), and judges it against the
ground truth with ``train.reward.judge``. Of the shaping only ``id_penalty`` applies here: the rounds and
their formats are not recoverable from the text alone.

In the trainer config::

    reward:
      custom_reward_function:
        path: pipelines/train/reward_fn.py
        name: compute_score
        reward_kwargs: {m3agent_config: ${m3agent.config}, overrides: ${m3agent.overrides}}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from m3agent.control.protocol import ControlStep
from m3agent.errors import M3AgentError
from m3agent.eval.rewards import Episode, final_answer
from m3agent.memory.search import check_before_clip
from pipelines.train.runtime import runtime


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None,
                  m3agent_config: str | None = None, overrides: Sequence[str] = (), **kwargs: Any) -> dict:
    """``{"score": reward, ...its parts}``: verl logs every key beside the score."""
    rt = runtime({"config": m3agent_config, "overrides": list(overrides)})
    extra_info = dict(extra_info or {})
    raw = final_answer(solution_str)
    episode = Episode(str(extra_info.get("question") or ""), str(ground_truth or ""), _named(raw, extra_info, rt),
                      raw, (), str(extra_info.get("question_id") or ""))
    reward = rt.rewarder.score(episode)
    return reward.metrics()


def _named(answer: str, extra_info: dict, rt) -> str:
    """``answer`` with ids replaced by the names in the row's memory (unchanged when it names none)."""
    if not extra_info.get("memory"):
        return answer
    try:
        graph = rt.shelf.get(extra_info["memory"])
        video = graph.resolve_video(extra_info.get("video") or None)
        before_clip = check_before_clip(extra_info.get("before_clip"), gaps=True)
        return ControlStep(graph, rt.config.control).namer(video.id, before_clip)(answer)
    except M3AgentError:
        return answer
