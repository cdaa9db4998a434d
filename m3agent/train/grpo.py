"""RL of the control policy on CPU: TRL's ``GRPOTrainer`` driving the project's own ``control`` environment.

TRL samples nothing itself: its ``rollout_func`` hands each batch of prompts (every prompt ``generations`` times,
GRPO's group) to :class:`ControlRollouts`, which plays whole multi-round episodes with the current weights and
returns the tokens with ``env_mask`` (search results get no gradient) and each episode's reward (the judge's verdict
plus the configured shaping, :mod:`m3agent.eval.rewards`), the reward TRL's group advantages are computed from.
Settings follow M3-Agent's recipe where a small CPU run allows (DAPO's clip-higher ``epsilon_high`` 0.28 and
token-mean loss, no KL by default, and with ``resample`` its dynamic sampling, :mod:`m3agent.train.dynamic_sampling`);
every step's reward and accuracy go to ``steps.jsonl`` for the curve.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from m3agent.train.dynamic_sampling import resample_flat_groups
from m3agent.train.rollouts import ControlRollouts, trl_output


@dataclass(frozen=True)
class GrpoSettings:
    steps: int = 40
    prompts_per_step: int = 2
    generations: int = 4  # episodes per prompt: the group whose rewards are compared
    learning_rate: float = 2e-5
    epsilon_high: float = 0.28  # DAPO's clip-higher (M3-Agent)
    beta: float = 0.0  # KL to the starting policy (M3-Agent: 0.001)
    temperature: float = 0.8
    max_new_tokens: int = 48  # one reply
    #: episodes a forward/backward pass takes; a step accumulates its prompts x generations episodes in passes of
    #: this many (an episode's search results make it long: all twelve of one step at once took 24 GiB)
    micro_batch: int = 2
    save_every: int = 5
    seed: int = 42
    #: DAPO's dynamic sampling: fresh groups a step may draw to replace groups whose episodes all scored alike
    #: (they teach nothing); 0: off, each group drawn costs about one group's episodes of time
    resample: int = 0


def prompt_key(messages: Sequence[dict]) -> str:
    """What identifies a task by its prompt (TRL hands ``rollout_func`` prompts, not rows)."""
    return json.dumps([[m.get("role"), m.get("content")] for m in messages], ensure_ascii=False)


class StepLog:
    """Each step's episodes, summarized, appended to ``steps.jsonl`` (the curve is drawn from it)."""

    def __init__(self, path: Path):
        self.path = path

    def add(self, rollouts, **extra: Any) -> dict:
        rows = [json.loads(line) for line in self.path.read_text().splitlines()] if self.path.exists() else []
        n = max(len(rollouts), 1)
        row = {"step": len(rows) + 1, "reward": sum(r.reward for r in rollouts) / n,
               "accuracy": sum(bool(r.right) for r in rollouts) / n, "rounds": sum(r.rounds for r in rollouts) / n,
               "episodes": len(rollouts), **extra}
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(row) + "\n")
        return row


def env_reward(prompts=None, completions=None, env_reward: Sequence[float] = (), **_: Any) -> list[float]:
    """The reward TRL reads: the environment's, computed when each episode ended."""
    return [float(r) for r in env_reward]


def train_grpo(model, tokenizer, tasks: Sequence[dict[str, Any]], env_for, out_dir: str | Path,
               settings: GrpoSettings = GrpoSettings(), *, on_step: Callable[[dict], None] | None = None):
    """Run GRPO on ``model`` (a PEFT model: its adapter learns) over ``tasks`` (each with the ``prompt`` its
    environment starts with); checkpoints go to ``out_dir`` every ``save_every`` steps and a stopped run resumes
    from its last one. Returns the trainer."""
    import os

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_prompt = {prompt_key(t["prompt"]): t for t in tasks}
    rollouts = ControlRollouts(tokenizer, env_for, max_new_tokens=settings.max_new_tokens,
                               temperature=settings.temperature)
    log = StepLog(out / "steps.jsonl")

    def rollout_func(prompts, trainer) -> dict[str, Any]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        episodes = rollouts.run(model, [by_prompt[prompt_key(p)] for p in prompts])
        step = resample_flat_groups(episodes, settings.generations, settings.resample,
                                    lambda task: rollouts.run(model, [task] * settings.generations), tasks,
                                    random.Random(f"{settings.seed}:{trainer.state.global_step}"))
        row = log.add(step.first, groups=len(episodes) // settings.generations, spread_drawn=step.spread_drawn,
                      redrawn=step.redrawn, spread_kept=step.spread_kept)
        if on_step:
            on_step(row)
        return trl_output(step.episodes)

    episodes = settings.prompts_per_step * settings.generations
    micro = max(d for d in range(1, min(settings.micro_batch, episodes) + 1) if episodes % d == 0)
    args = GRPOConfig(
        output_dir=str(out), use_cpu=True, bf16=False, report_to="none", seed=settings.seed,
        max_steps=settings.steps, per_device_train_batch_size=micro,
        gradient_accumulation_steps=episodes // micro, num_generations=settings.generations, learning_rate=settings.learning_rate,
        loss_type="dapo", epsilon_high=settings.epsilon_high, beta=settings.beta, temperature=settings.temperature,
        max_completion_length=4096, logging_steps=1, save_strategy="steps", save_steps=settings.save_every,
        gradient_checkpointing=False,  # a 135M model fits; recomputing activations would cost a third more time
        save_total_limit=2, dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=False)
    dataset = Dataset.from_list([{"prompt": t["prompt"]} for t in tasks])
    trainer = GRPOTrainer(model=model, reward_funcs=[env_reward], args=args, train_dataset=dataset,
                          processing_class=tokenizer, rollout_func=rollout_func)
    resume = any(out.glob("checkpoint-*"))
    trainer.train(resume_from_checkpoint=True if resume else None)
    (out / "grpo_settings.json").write_text(json.dumps(asdict(settings), indent=2))
    return trainer
