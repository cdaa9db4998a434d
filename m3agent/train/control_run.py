"""``m3agent train control``: train the control model on this machine, from the rows ``m3agent train-data`` wrote.

The same Parquet rows verl trains on (one environment, one reward for the CPU run and the GPU run), read here
as tasks: the memory DB each row names, its question, reference answer and ``before_clip``, and (from the
evidence file the world generator writes beside its annotations) the clips its evidence is in.

1. a supervised warm start on gold episodes (:mod:`m3agent.train.gold`) of ``warm_tasks`` rows;
2. GRPO (:mod:`m3agent.train.grpo`) on the rows, with checkpoints: a stopped run resumes;
3. the adapter in ``OUT/adapter`` (PEFT's folder: ``control.chat.adapter`` of the transformers backend) and
   ``OUT/adapter.gguf`` (the llamacpp backend's), the curve ``OUT/curve.png`` and ``OUT/summary.json``.
Each stage that finished is kept: a re-run goes on from where the last one stopped.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from m3agent.config import Config
from m3agent.errors import M3AgentError
from m3agent.train.grpo import GrpoSettings
from m3agent.train.lessons import OWN_SHARE
from m3agent.train.policy import LoraSettings


class ControlTrainingError(M3AgentError, ValueError):
    """Training data that cannot train the control model (no rows, rows of another task)."""


@dataclass(frozen=True)
class ControlTraining:
    """The knobs of a CPU run: how many rows warm it up, then the GRPO and LoRA settings."""

    warm_tasks: int = 256
    warm_epochs: int = 1
    warm_learning_rate: float = 2e-4
    warm_batch: int = 4
    #: recompute activations in the warm start's backward pass (:func:`m3agent.train.sft.warm_start`): about 0.4x
    #: the memory, 1.4x the time (bench/perf_warm_start.py); for machines with less than 24 GB
    checkpointing: bool = False
    lessons: float = 0.3  # share of tasks shown feedback lessons (:mod:`m3agent.train.lessons`); 0: none
    corrections: float = OWN_SHARE  # of those, the share also shown a correction of their own question
    rounds: int = 3  # control rounds an episode may take while training (inference keeps control.max_rounds)
    #: the order search results are shown in while training (:mod:`m3agent.train.clip_order`); in use, the search's
    clip_order: str = "search"
    #: an adapter to go on training (a PEFT folder, or "bundled": the shipped one) instead of a new one
    from_adapter: str = ""
    grpo: GrpoSettings = field(default_factory=GrpoSettings)
    lora: LoraSettings = field(default_factory=LoraSettings)
    threads: int = 0


def starting_adapter(adapter: str) -> str | None:
    """The PEFT folder a run starts from: ``adapter``, the shipped one for "bundled", or None for a new adapter."""
    if not adapter:
        return None
    from m3agent.config import BUNDLED_ADAPTER
    from m3agent.models.bundled import chat_adapter

    path = chat_adapter(adapter, "", "peft") if adapter == BUNDLED_ADAPTER else adapter
    if not (Path(path) / "adapter_config.json").is_file():
        raise ControlTrainingError(f"--from-adapter {adapter}: no PEFT adapter there (adapter_config.json)")
    return path


def read_tasks(data: str | Path, evidence: str | Path | None = None, worked: str | Path | None = None,
               queries: str | Path | None = None) -> list[dict[str, Any]]:
    """Control tasks from train-data Parquet rows (with each question's evidence clips, the answers the gold
    replies give with their working, and what they search for a second hop, when given)."""
    import pyarrow.parquet as pq

    from m3agent.train.tasks import task_of

    clips, workings, follow = _sidecar(evidence), _sidecar(worked), _sidecar(queries)
    tasks = []
    for row in pq.read_table(str(data)).to_pylist():
        extra = row.get("extra_info") or {}
        if row.get("agent_name") != "m3agent_control" or not extra.get("memory"):
            continue
        task = task_of(extra, (row.get("reward_model") or {}).get("ground_truth"))
        task.update(memory=extra["memory"], prompt=row["prompt"], evidence=clips.get(extra.get("question_id"), []))
        if workings.get(extra.get("question_id")):
            task["worked"] = workings[extra["question_id"]]
        if follow.get(extra.get("question_id")):
            task["evidence_queries"] = follow[extra["question_id"]]
        tasks.append(task)
    if not tasks:
        raise ControlTrainingError(f"{data} holds no control rows (write them with m3agent train-data)")
    return tasks


def _sidecar(path: str | Path | None) -> dict[str, Any]:
    """A worlds sidecar (``NAME.evidence.json``, ``NAME.worked.json``, ``NAME.queries.json``): ``{question_id: ...}``,
    empty when not given."""
    if not path:
        return {}
    try:
        held = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ControlTrainingError(f"cannot read {path} ({exc}); m3agent train worlds writes it") from exc
    if not isinstance(held, dict):
        raise ControlTrainingError(f"{path} is not a {{question_id: ...}} object; m3agent train worlds writes it")
    return held


def train_control(config: Config, data: str | Path, out_dir: str | Path, settings: ControlTraining = ControlTraining(),
                  *, evidence: str | Path | None = None, worked: str | Path | None = None,
                  queries: str | Path | None = None, notice: Callable[[str], None] = print) -> dict[str, Any]:
    import dataclasses

    from m3agent import factory
    from m3agent.models.bundled import bundled_chat_gguf
    from m3agent.train.adapter_gguf import write_gguf_adapter
    from m3agent.train.clip_order import shown_in_order
    from m3agent.train.grpo import train_grpo
    from m3agent.train.lessons import add_lessons
    from m3agent.train.policy import load_base, with_adapter
    from m3agent.train.tasks import MemoryShelf

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    config = dataclasses.replace(config, control=dataclasses.replace(config.control, max_rounds=settings.rounds))
    tasks = read_tasks(data, evidence, worked, queries)
    with_lessons = add_lessons(tasks, settings.lessons, settings.grpo.seed, corrections=settings.corrections)
    shelf = MemoryShelf(config)

    def env_for(task: dict[str, Any]):
        return factory.build_env(config, "control", memory=shown_in_order(
            shelf.get(task["memory"]), settings.clip_order, settings.grpo.seed, task.get("hidden") or ()))

    for task in tasks:  # the prompt as this run's environment starts it (the rows may carry another round count)
        task["prompt"] = env_for(task).reset(task)
    base_model = config.control.chat.model if config.control.chat.model.endswith(".gguf") else str(bundled_chat_gguf())
    tokenizer, model = load_base(base_model, settings.threads)
    warm_dir = out / "warm"
    summary: dict[str, Any] = {"tasks": len(tasks), "tasks_with_lessons": with_lessons, "settings": asdict(settings),
                               "tasks_with_follow_ups": sum(bool(t.get("evidence_queries")) for t in tasks),
                               "corrected": {kind: sum(bool(t.get(kind)) for t in tasks)
                                             for kind in ("corrected", "hidden", "overruled")}}
    if (warm_dir / "adapter_config.json").exists():
        model = with_adapter(model, settings.lora, warm_dir)
        notice(f"warm start: kept from {warm_dir}")
    else:
        model = with_adapter(model, settings.lora, starting_adapter(settings.from_adapter))
        if settings.warm_tasks <= 0:  # RL only: GRPO goes on from the starting adapter (or a new one)
            notice("warm start: none (--warm-tasks 0), GRPO only")
        else:
            _warm_up(model, tokenizer, tasks, env_for, settings, warm_dir, notice)
    summary["warm_losses"] = json.loads((warm_dir / "losses.json").read_text()) if (warm_dir / "losses.json").exists() \
        else []
    train_grpo(model, tokenizer, tasks, env_for, out / "grpo", settings.grpo,
               on_step=lambda row: notice(f"GRPO step {row['step']}: reward {row['reward']:.2f}, "
                                          f"accuracy {row['accuracy']:.2f}, groups that teach "
                                          f"{row['spread_kept']}/{row['groups']} ({row['redrawn']} redrawn)"))
    model.save_pretrained(str(out / "adapter"))
    write_gguf_adapter(out / "adapter", base_model, out / "adapter.gguf")  # what the llamacpp backend applies
    steps = [json.loads(line) for line in (out / "grpo" / "steps.jsonl").read_text().splitlines()]
    summary.update(steps=steps, seconds=round(time.perf_counter() - started, 1), adapter=str(out / "adapter"))
    plot_curve(summary["warm_losses"], steps, out / "curve.png")
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    shelf.close()
    return summary


def _warm_up(model, tokenizer, tasks: list[dict[str, Any]], env_for: Callable, settings: ControlTraining,
             warm_dir: Path, notice: Callable[[str], None]) -> None:
    """The supervised warm start on ``settings.warm_tasks`` gold episodes; the adapter and losses go to
    ``warm_dir`` (a stopped warm start goes on from the state it saves there)."""
    from tqdm import tqdm

    from m3agent.train.gold import gold_reply
    from m3agent.train.rollouts import ControlRollouts
    from m3agent.train.sft import warm_start

    picked = random.Random(settings.grpo.seed).sample(tasks, min(settings.warm_tasks, len(tasks)))
    gold = ControlRollouts(tokenizer, env_for).replay(picked, gold_reply)
    notice(f"warm start: {len(gold)} gold episodes, {sum(bool(g.right) for g in gold)} judged right")
    total = settings.warm_epochs * -(-len(gold) // settings.warm_batch)
    progress = warm_dir / "progress.pt"  # saved every few steps: a stopped run goes on from there
    if progress.is_file():
        notice(f"warm start: going on from {progress}")
    warm_dir.mkdir(parents=True, exist_ok=True)
    with tqdm(total=total, desc="warm start", unit="step") as bar:
        def step(number: int, loss: float) -> None:
            bar.update(number - bar.n)
            bar.set_postfix(loss=f"{loss:.3f}")

        losses = warm_start(model, gold, pad=tokenizer.pad_token_id, epochs=settings.warm_epochs,
                            learning_rate=settings.warm_learning_rate, batch_size=settings.warm_batch,
                            checkpointing=settings.checkpointing, progress=progress,
                            seed=settings.grpo.seed, on_step=step)
    notice(f"warm start: loss {losses[0]:.3f} -> {losses[-1]:.3f} over {len(losses)} steps")
    model.save_pretrained(str(warm_dir))
    (warm_dir / "losses.json").write_text(json.dumps(losses))
    progress.unlink(missing_ok=True)  # the adapter is saved: the run keeps it from here


SMOOTH = 5  # steps a GRPO curve's running mean covers: one step's dozen episodes are a noisy estimate


def running_mean(values: list[float], window: int = SMOOTH) -> list[float]:
    """Each value averaged with up to ``window - 1`` before it."""
    return [sum(values[max(0, i - window + 1):i + 1]) / (i + 1 - max(0, i - window + 1)) for i in range(len(values))]


def plot_curve(losses: list[float], steps: list[dict], path: Path) -> None:
    """The warm start's loss and each GRPO step's reward and accuracy (with a running mean), side by side; a run
    with no warm start gets the GRPO panel alone, not an empty loss axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if losses:
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
        left.plot(range(1, len(losses) + 1), losses, color="tab:gray")
        left.set(title="warm start (gold episodes)", xlabel="step", ylabel="loss")
    else:
        fig, right = plt.subplots(figsize=(5.5, 3.6))
    xs = [s["step"] for s in steps]
    right.plot(xs, [s["reward"] for s in steps], label="reward", color="tab:blue", alpha=0.35)
    right.plot(xs, [s["accuracy"] for s in steps], label="accuracy", color="tab:green", alpha=0.35)
    right.plot(xs, running_mean([s["accuracy"] for s in steps]), label=f"accuracy, mean of {SMOOTH} steps",
               color="tab:green", linewidth=2.2)
    title = "GRPO (episodes of each step)" if losses else "GRPO alone, no warm start (episodes of each step)"
    right.set(title=title, xlabel="step", ylim=(-0.05, 1.05))
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
