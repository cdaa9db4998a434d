"""m3agent's environments as verl agent loops (``@register``), without a fork of verl.

Each trajectory is one episode of an m3agent environment (:mod:`m3agent.envs`), driven the same way whatever
the environment: verl owns the tokens: the prompt is rendered with the policy's chat template, every model
reply is appended as generated (response mask 1), and every observation as context tokens (response mask 0),
so only the model's own tokens carry loss. Two loops are registered, one per environment; a row may name
another with ``extra_info["env"]``:

- ``m3agent_control``: :class:`m3agent.envs.control.ControlEnv`, the same system prompt, round instructions,
  action parsing, memory search and forced answer on the last of H rounds (``control.max_rounds``, 5) that
  ``m3agent ask`` and the bench use, so the trained model is served back with no change of protocol.
  Observations are search results with the next round's instruction.
- ``m3agent_memory_build``: :class:`m3agent.envs.memory_build.MemoryBuildEnv`, the memory-construction policy
  (Mem-alpha style): each reply stores, updates or deletes memory for one chunk of a stream; observations
  are the next chunk with the memory around it.

The reward is computed by the env when the episode ends (control: judge correctness plus the configured
shaping, :mod:`m3agent.eval.rewards`; memory-build: held-out QA accuracy less the memory-size and format
penalties) and returned as ``AgentLoopOutput.reward_score``: verl then writes it into ``rm_scores`` itself
and calls no reward function for these rows. ``extra_fields["reward_extra_info"]`` carries the reward's parts
to verl's metrics, the same keys for every row of one environment (verl takes a batch's keys from its first
row, so one run trains one environment).

Rows come from ``m3agent train-data`` (``--task control`` or ``--task memory-build``); the m3agent
configuration from the trainer config's ``m3agent`` section (``runtime.py``). Register the loops in a run
with ``actor_rollout_ref.rollout.agent.agent_loop_config_path=pipelines/train/config/agent_loop.yaml``.
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from m3agent.envs.base import Env, StepResult
from m3agent.factory import build_env
from m3agent.train.tasks import AGENT_NAME, MEMORY_BUILD_AGENT, memory_task_of, task_of
from pipelines.train.runtime import Runtime, runtime

if TYPE_CHECKING:
    from m3agent.config import Config


@dataclass
class Trajectory:
    """The token stream of one episode: the prompt, then replies (mask 1) and observations (mask 0)."""

    prompt_ids: list[int]
    tokens: list[int]
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)  # stays empty when the server sends none
    timing: dict[str, float] = field(
        default_factory=lambda: {"generate_sequences": 0.0, "tool_calls": 0.0, "compute_score": 0.0})


class EnvAdapter(abc.ABC):
    """What differs between environments for the loop: how an episode's env and task come from the runtime
    and the row, how long a reply may be, how an episode that ran out of tokens ends, what is logged."""

    name = ""

    @abc.abstractmethod
    def build(self, rt: Runtime, extra_info: dict[str, Any]) -> Env: ...

    @abc.abstractmethod
    def task(self, extra_info: dict[str, Any], ground_truth: str | None) -> dict[str, Any]: ...

    @abc.abstractmethod
    def max_tokens(self, config: Config) -> int: ...

    @abc.abstractmethod
    def abort(self, env: Env, reason: str) -> StepResult: ...

    @abc.abstractmethod
    def metrics(self, result: StepResult) -> dict[str, float]:
        """Flat numbers for verl's ``reward_extra_info``: the same keys for every episode."""

    def extra(self, result: StepResult) -> dict[str, Any]:
        """Fields beside the reward's parts in ``AgentLoopOutput.extra_fields``."""
        return {}


class ControlAdapter(EnvAdapter):
    """A question over the memory DB the row names, opened once per worker (the shelf); rewarded by the judge."""

    name = "control"

    def build(self, rt: Runtime, extra_info: dict[str, Any]) -> Env:
        return build_env(rt.config, "control", memory=rt.shelf.get(extra_info["memory"]), rewarder=rt.rewarder)

    def task(self, extra_info: dict[str, Any], ground_truth: str | None) -> dict[str, Any]:
        return task_of(extra_info, ground_truth)

    def max_tokens(self, config: Config) -> int:
        return config.control.max_tokens

    def abort(self, env: Env, reason: str) -> StepResult:
        return env.abort(reason)  # judged wrong, shaped

    def metrics(self, result: StepResult) -> dict[str, float]:
        return result.info["reward"].metrics()

    def extra(self, result: StepResult) -> dict[str, Any]:
        return {"m3agent_answer": result.info["answer"]}


class MemoryBuildAdapter(EnvAdapter):
    """A stream written into a fresh memory with the worker's embedder, scored by the training judge."""

    name = "memory-build"
    METRICS = ("score", "accuracy", "size_ratio", "malformed_share", "calls", "failed_calls")

    def build(self, rt: Runtime, extra_info: dict[str, Any]) -> Env:
        return build_env(rt.config, "memory-build", embedder=rt.shelf.embedder(), judge=rt.rewarder.judge)

    def task(self, extra_info: dict[str, Any], ground_truth: str | None) -> dict[str, Any]:
        return memory_task_of(extra_info)

    def max_tokens(self, config: Config) -> int:
        return config.train.memory_build.max_tokens

    def abort(self, env: Env, reason: str) -> StepResult:
        """The rest of the stream goes unread (empty replies store nothing) and memory is scored as it stands,
        so a policy that talks too much loses what it never got to keep."""
        result = env.step("")
        while not result.done:
            result = env.step("")
        return result

    def metrics(self, result: StepResult) -> dict[str, float]:
        return {"score": float(result.reward), **{key: float(result.info[key]) for key in self.METRICS[1:]}}


ADAPTERS: dict[str, EnvAdapter] = {adapter.name: adapter for adapter in (ControlAdapter(), MemoryBuildAdapter())}


class M3AgentLoop(AgentLoopBase):
    """One episode of the row's environment (``extra_info["env"]``, else the loop's own) per trajectory."""

    env_name = "control"

    def __init__(self, *args, tools=None, **kwargs):  # verl hands every loop its tools: the envs act themselves
        super().__init__(*args, **kwargs)
        self.runtime = runtime(self.config.get("m3agent"))
        self.response_length = self.rollout_config.response_length

    def adapter(self, extra_info: dict[str, Any]) -> EnvAdapter:
        name = extra_info.get("env") or self.env_name
        if name not in ADAPTERS:
            raise ValueError(f"no agent loop for env {name!r} (known: {', '.join(ADAPTERS)})")
        return ADAPTERS[name]

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        extra_info = dict(kwargs.get("extra_info") or {})
        ground_truth = (kwargs.get("reward_model") or {}).get("ground_truth")
        adapter = self.adapter(extra_info)
        env = adapter.build(self.runtime, extra_info)
        try:
            return await self._episode(adapter, env, adapter.task(extra_info, ground_truth), sampling_params)
        finally:
            close = getattr(env, "close", None)  # an env holding files (memory-build's DB) lets them go
            if close is not None:
                close()

    async def _episode(self, adapter: EnvAdapter, env: Env, task: dict[str, Any],
                       sampling_params: dict[str, Any]) -> AgentLoopOutput:
        messages = await self.loop.run_in_executor(None, env.reset, task)
        prompt_ids = await self.ct_build_initial_tokens(messages)
        trajectory = Trajectory(prompt_ids, list(prompt_ids))
        request_id = uuid4().hex
        max_tokens = adapter.max_tokens(self.runtime.config)
        result: StepResult | None = None
        while result is None or not result.done:
            reply = await self._generate(trajectory, request_id, sampling_params, max_tokens)
            shown = len(env.messages)
            start = time.perf_counter()
            result = await self.loop.run_in_executor(None, env.step, reply)
            trajectory.timing["compute_score" if result.done else "tool_calls"] += time.perf_counter() - start
            if not result.done and not await self._observe(trajectory, env.messages[:shown + 1], env.messages):
                result = await self.loop.run_in_executor(
                    None, adapter.abort, env, "the episode ran out of response tokens before it ended")
        return self._output(trajectory, result, len(env.messages), adapter)

    async def _generate(self, trajectory: Trajectory, request_id: str, sampling_params: dict[str, Any],
                        max_tokens: int) -> str:
        """One model reply, appended to the trajectory as trained tokens; returns its text."""
        budget = self.response_length - len(trajectory.mask)
        params = {**sampling_params, "max_tokens": max(1, min(max_tokens, budget))}
        start = time.perf_counter()
        output = await self.server_manager.generate(request_id=request_id, prompt_ids=trajectory.tokens,
                                                    sampling_params=params)
        trajectory.timing["generate_sequences"] += time.perf_counter() - start
        logprobs = trajectory.logprobs if (trajectory.logprobs or output.log_probs) else None
        merged, trajectory.mask, new_logprobs = await self.ct_merge_assistant_token(
            trajectory.tokens, output.token_ids, trajectory.mask, logprobs, assistant_logprobs=output.log_probs or None)
        trajectory.tokens, trajectory.logprobs = merged.token_ids, new_logprobs or []
        return self.tokenizer.decode(output.token_ids, skip_special_tokens=True)

    async def _observe(self, trajectory: Trajectory, before: list[dict], after: list[dict]) -> bool:
        """Append the messages the step added (the observation) as masked context;
        False, leaving the trajectory as it was, when they do not fit the response budget."""
        if len(trajectory.mask) >= self.response_length:
            return False
        merged, mask, logprobs = await self.ct_merge_context_msg(before, after, trajectory.tokens, trajectory.mask,
                                                                 trajectory.logprobs or None)
        if len(mask) >= self.response_length:
            return False
        trajectory.tokens, trajectory.mask, trajectory.logprobs = merged.token_ids, mask, logprobs or []
        return True

    def _output(self, trajectory: Trajectory, result: StepResult, turns: int, adapter: EnvAdapter) -> AgentLoopOutput:
        limit = self.response_length
        response = trajectory.tokens[len(trajectory.prompt_ids):]
        return AgentLoopOutput(
            prompt_ids=trajectory.prompt_ids, response_ids=response[:limit], response_mask=trajectory.mask[:limit],
            response_logprobs=trajectory.logprobs[:limit] or None, reward_score=result.reward, num_turns=turns,
            metrics=trajectory.timing,
            extra_fields={"reward_extra_info": adapter.metrics(result), "turn_scores": [], "tool_rewards": [],
                          **adapter.extra(result)})


@register(AGENT_NAME)
class M3AgentControlLoop(M3AgentLoop):
    env_name = "control"


@register(MEMORY_BUILD_AGENT)
class M3AgentMemoryBuildLoop(M3AgentLoop):
    env_name = "memory-build"
