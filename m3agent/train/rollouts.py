"""Multi-turn episodes of the control environment, sampled from a transformers model, as RL trains on them.

One episode is one token sequence: the prompt (system + round 1, exactly what :meth:`ControlEnv.reset` gives),
then round by round the model's reply (its own tokens) and what the environment said back (the next round's search
results and instruction). ``env_mask`` marks the model's tokens 1 and the environment's 0, so the loss (TRL's
``rollout_func`` contract) only ever trains what the model wrote. Open episodes move through their rounds together:
one ``generate`` call per round for all of them, left-padded.

The environment's text is cut from the chat template's own rendering of the conversation (what the template puts
between the reply and the next assistant turn), so training sees the tokens inference sees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from m3agent.envs.base import Env

EnvFor = Callable[[dict[str, Any]], Env]


@dataclass
class Rollout:
    """One finished episode: what TRL trains on, and what the run logs."""

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)  # 1: the model's token, 0: the environment's
    reward: float = 0.0
    right: bool | None = None  # the judge's verdict (None: not judged)
    rounds: int = 0
    answer: str = ""


class ControlRollouts:
    """Sample episodes of ``env_for(task)`` environments with a causal LM and its tokenizer."""

    def __init__(self, tokenizer, env_for: EnvFor, *, max_new_tokens: int = 64, temperature: float = 1.0,
                 top_p: float = 1.0):
        self.tok, self.env_for = tokenizer, env_for
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        self.eos = tokenizer.convert_tokens_to_ids(tokenizer.eos_token) if tokenizer.eos_token else None
        if self.tok.pad_token_id is None:
            self.tok.pad_token = self.tok.eos_token

    # ------------------------------------------------------------------ text <-> tokens
    def render(self, messages: Sequence[dict], generation: bool = True) -> str:
        return self.tok.apply_chat_template(list(messages), add_generation_prompt=generation, tokenize=False)

    def encode(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    def prompt_ids(self, messages: Sequence[dict]) -> list[int]:
        """The tokens a conversation's next reply is generated after."""
        return self.encode(self.render(messages))

    def after_reply(self, before: Sequence[dict], after: Sequence[dict]) -> str:
        """The environment's text after the model's reply to conversation ``before`` (``after`` holds ``before``,
        the reply and what came back): what the template renders between the reply's end (its end-of-turn token,
        which the model wrote) and the next assistant turn's start."""
        reply_turn = self.render(list(after[: len(before) + 1]), generation=False)
        full = self.render(after)
        if not full.startswith(reply_turn):
            raise ValueError("the chat template renders a conversation differently once it grows")
        end = self.tok.eos_token or ""
        cut = reply_turn.rfind(end) + len(end) if end and end in reply_turn else len(reply_turn)
        return reply_turn[cut:] + full[len(reply_turn):]

    # ------------------------------------------------------------------ episodes
    def run(self, model, tasks: Sequence[dict[str, Any]]) -> list[Rollout]:
        """One episode per task (a task may come several times: GRPO's group), in task order, the model's
        replies sampled round by round."""
        return self._episodes(tasks, lambda rollouts, envs: self.generate(
            model, [r.prompt_ids + r.completion_ids for r in rollouts]))

    def replay(self, tasks: Sequence[dict[str, Any]], policy: Callable[[Env, dict[str, Any]], str]) -> list[Rollout]:
        """Episodes whose replies ``policy(env, task)`` writes (gold replies, a scripted policy): the same tokens
        and mask a sampled episode with those replies would have."""
        def replies(rollouts, envs):
            return [self.encode(policy(env, env.task)) + ([self.eos] if self.eos is not None else []) for env in envs]

        return self._episodes(tasks, replies)

    def _episodes(self, tasks: Sequence[dict[str, Any]], replies_of) -> list[Rollout]:
        envs = [self.env_for(task) for task in tasks]
        conversations = [env.reset(task) for env, task in zip(envs, tasks)]
        rollouts = [Rollout(self.prompt_ids(messages)) for messages in conversations]
        open_ = list(range(len(tasks)))
        while open_:
            replies = replies_of([rollouts[i] for i in open_], [envs[i] for i in open_])
            still = []
            for i, reply in zip(open_, replies):
                if not self._step(rollouts[i], envs[i], conversations, i, reply):
                    still.append(i)
            open_ = still
        return rollouts

    def _step(self, rollout: Rollout, env: Env, conversations: list, i: int, reply: list[int]) -> bool:
        """Apply one reply to its episode; True when the episode is over."""
        text = self.tok.decode(reply, skip_special_tokens=True)
        rollout.completion_ids += reply
        rollout.env_mask += [1] * len(reply)
        if self.eos is not None and (not reply or reply[-1] != self.eos):  # cut short: the turn still ends
            rollout.completion_ids.append(self.eos)
            rollout.env_mask.append(0)
        result = env.step(text)
        rollout.rounds += 1
        if result.done:
            rollout.reward = float(result.reward)
            rollout.right = getattr(result.info.get("verdict"), "correct", None)
            rollout.answer = str(result.info.get("answer") or "")
            return True
        said = self.encode(self.after_reply(conversations[i], result.observation))
        rollout.completion_ids += said
        rollout.env_mask += [0] * len(said)
        conversations[i] = result.observation
        return False

    def generate(self, model, sequences: Sequence[list[int]]) -> list[list[int]]:
        """The next reply of each token sequence (up to and with its end-of-turn token), in one batch."""
        import torch

        width = max(len(s) for s in sequences)
        pad = self.tok.pad_token_id
        ids = torch.tensor([[pad] * (width - len(s)) + list(s) for s in sequences])
        mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences])
        options = {"max_new_tokens": self.max_new_tokens, "pad_token_id": pad, "eos_token_id": self.eos,
                   "do_sample": self.temperature > 0}
        if self.temperature > 0:
            options.update(temperature=self.temperature, top_p=self.top_p)
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                out = model.generate(input_ids=ids.to(model.device), attention_mask=mask.to(model.device), **options)
        finally:
            model.train(was_training)
        replies = []
        for row in out[:, width:].tolist():
            if self.eos is not None and self.eos in row:
                row = row[: row.index(self.eos) + 1]
            else:
                row = [t for t in row if t != pad]
            replies.append(row)
        return replies


def trl_output(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """What TRL's ``rollout_func`` returns: the token lists, no sampling log-probabilities (the trainer computes
    them: generation and training share one set of weights), the mask, and the fields the reward reads."""
    return {"prompt_ids": [r.prompt_ids for r in rollouts], "completion_ids": [r.completion_ids for r in rollouts],
            "logprobs": None, "env_mask": [r.env_mask for r in rollouts],
            "env_reward": [r.reward for r in rollouts], "env_right": [r.right for r in rollouts],
            "env_rounds": [r.rounds for r in rollouts]}
