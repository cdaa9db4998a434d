"""The control task as an environment: answer one question by searching a memory graph, round by round.

It is :class:`m3agent.control.protocol.ControlStep` behind the :class:`Env` contract, so an RL rollout (the
verl agent loop in ``pipelines/train``), the batch :class:`m3agent.control.Controller` used by the bench
and the app, and a scripted test policy all see the same prompts, parse replies the same way and end on
the same round::

    env = factory.build_env(config, "control", memory=graph)
    messages = env.reset({"question": "Who opened the fridge?", "answer": "Alice"})
    while True:
        result = env.step(policy(messages))      # the reply text
        if result.done:
            break
        messages = result.observation
    result.reward, result.info["answer"], result.info["verdict"]

An episode ends when the model answers, or on round ``control.max_rounds`` (H), whose reply is the
answer whatever its action. Only then is the reward computed (:mod:`m3agent.eval.rewards`).
"""

from __future__ import annotations

from typing import Any

from m3agent.config import ControlConfig, TrainConfig
from m3agent.control.protocol import ControlStep, Memory, QuestionState
from m3agent.control.records import Answer, Question, Round
from m3agent.envs.base import Env, EnvError, StepResult
from m3agent.eval.grounding import follow_up
from m3agent.eval.rewards import Episode, Reward, Rewarder
from m3agent.memory.search import check_before_clip
from m3agent.models.llm.base import ChatResponse


class ControlEnv(Env):
    """One question at a time over one memory. ``task``: ``question``, and optionally ``video`` (name or id;
    default the only one), ``before_clip`` (the last clip the question may see) and ``answer`` (the
    reference; without it the episode is not judged and its reward is only the shaping) and ``lessons`` (feedback
    lines shown with the question instead of the ones memory holds: training teaches when to use them)."""

    name = "control"
    requires = ("memory", "rewarder", "control")

    def __init__(self, memory: Memory, rewarder: Rewarder | None = None, control: ControlConfig | None = None):
        # no hold on the answer (m3agent.eval.corrections): the model's own answer is what is rewarded
        self.control = ControlStep(memory, control, follow=follow_up(control or ControlConfig()))
        self.rewarder = rewarder
        self.state: QuestionState | None = None
        self.round = 0  # the model round being asked (1..H)
        self.task: dict[str, Any] = {}
        self.answer: Answer | None = None  # the finished episode's answer record (trace included)

    @classmethod
    def from_config(cls, config: TrainConfig, *, memory: Memory, rewarder: Rewarder,
                    control: ControlConfig) -> ControlEnv:
        return cls(memory, rewarder, control)

    @property
    def rounds(self) -> int:
        return self.control.rounds

    @property
    def messages(self) -> list[dict]:
        """The conversation so far, as a new list (a result kept by the caller does not change later)."""
        return list(self.state.messages) if self.state is not None else []

    @property
    def done(self) -> bool:
        return self.state is not None and self.state.done

    def reset(self, task: dict[str, Any]) -> list[dict]:
        """The system message and round 1's user message (the seed search's results, when configured). A
        question about a video memory lacks, or holds no clip of, is an :class:`EnvError`: there is nothing
        to learn from an episode that can only invent."""
        if not isinstance(task, dict) or not str(task.get("question") or "").strip():
            raise EnvError(f"a control task needs a question, got {task!r}")
        question = Question(str(task["question"]), check_before_clip(task.get("before_clip"), gaps=True),
                            task.get("video") or None)
        lessons = task.get("lessons")
        state = self.control.start(question, lessons=None if lessons is None else [str(x) for x in lessons])
        if state.error:
            raise EnvError(state.error)
        self.state, self.task, self.answer, self.round = state, dict(task), None, 1
        self.control.instruct(state, self.round)
        return self.messages

    def step(self, action: str | ChatResponse) -> StepResult:
        """Apply the model's reply: an answer (or any reply on the last round) ends the episode with its
        reward; otherwise memory is searched and the next round's user message carries the results."""
        state = self._open_state()
        step = self.control.apply(state, action, last=self.round >= self.rounds)
        if not state.done:
            self.round += 1
            self.control.instruct(state, self.round)
            return StepResult(self.messages, 0.0, False, {"round": step, "round_number": self.round - 1})
        return self._end(step)

    def abort(self, reason: str) -> StepResult:
        """End the episode without an answer (the driver ran out of its token budget): judged wrong, shaped."""
        state = self._open_state()
        state.fail(reason)
        return self._end(None)

    def _open_state(self) -> QuestionState:
        if self.state is None:
            raise EnvError("step before reset: call reset(task) first")
        if self.state.done:
            raise EnvError("the episode is over: call reset(task) for the next one")
        return self.state

    def _end(self, step: Round | None) -> StepResult:
        state = self.state
        self.answer = answer = self.control.finish(state)
        reward = self._reward(answer, state)
        info = {"round": step, "round_number": self.round, "answer": answer.answer, "raw_answer": state.final or "",
                "verdict": reward.verdict, "reward": reward, "error": state.error}
        return StepResult(self.messages, reward.total, True, info)

    def _reward(self, answer: Answer, state: QuestionState) -> Reward:
        episode = Episode(state.question.text, str(self.task.get("answer") or ""), answer.answer, state.final or "",
                          state.rounds, str(self.task.get("question_id") or ""))
        return (self.rewarder or Rewarder(None)).score(episode)

