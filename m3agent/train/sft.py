"""A supervised warm start: the policy learns the gold replies of whole episodes before RL.

Each example is an episode replayed with gold replies (:func:`m3agent.train.gold.gold_reply` through
:meth:`ControlRollouts.replay`), so it carries the same tokens and the same mask RL trains on: the loss counts the
model's own tokens (mask 1) and never the prompt or what the environment said back.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from pathlib import Path

from m3agent.errors import M3AgentError
from m3agent.train.rollouts import Rollout

IGNORED = -100  # the label transformers' loss skips


class WarmStartError(M3AgentError, ValueError):
    """A saved warm-start state that does not fit the adapter being trained."""


def batches(rollouts: Sequence[Rollout], size: int, pad: int):
    """``(input_ids, attention_mask, labels)`` tensors of ``size`` episodes each, padded on the right."""
    import torch

    for start in range(0, len(rollouts), size):
        chunk = rollouts[start:start + size]
        width = max(len(r.prompt_ids) + len(r.completion_ids) for r in chunk)
        ids, mask, labels = [], [], []
        for r in chunk:
            tokens = r.prompt_ids + r.completion_ids
            learn = [IGNORED] * len(r.prompt_ids) + [t if m else IGNORED for t, m in zip(r.completion_ids, r.env_mask)]
            fill = width - len(tokens)
            ids.append(tokens + [pad] * fill)
            mask.append([1] * len(tokens) + [0] * fill)
            labels.append(learn + [IGNORED] * fill)
        yield torch.tensor(ids), torch.tensor(mask), torch.tensor(labels)


def learned_loss(model, ids, mask, labels):
    """The causal LM loss of ``labels`` (mean over the tokens not :data:`IGNORED`), with the vocabulary's logits
    computed only at the positions that predict a learned token: an episode is mostly prompt and search results,
    and the output layer over 49k words at every position would cost more time and memory than the rest."""
    import torch

    targets = labels[:, 1:]
    wanted = (targets != IGNORED).any(dim=0).nonzero().squeeze(1)  # logits at t predict token t + 1
    logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=wanted).logits
    return torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                             targets[:, wanted].reshape(-1), ignore_index=IGNORED)


def warm_start(model, examples: Sequence[Rollout], *, pad: int, epochs: int = 1, learning_rate: float = 2e-4,
               batch_size: int = 4, seed: int = 0, checkpointing: bool = False,
               progress: str | os.PathLike[str] | None = None, save_every: int = 16,
               on_step: Callable[[int, float], None] | None = None) -> list[float]:
    """Train ``model``'s trainable weights on ``examples``; returns the loss of every step. ``checkpointing``: keep
    one layer's activations at a time and recompute the rest in the backward pass (the same gradients): a batch of
    long episodes otherwise holds every layer's, over twice the memory for about 0.7x the time. ``progress``: a
    file the state is saved to every ``save_every`` steps and resumed from, so a stopped warm start (an hour or
    two on 2 cores) goes on where it was saved and learns what an unbroken one would have."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=learning_rate)
    order = list(examples)
    plan = {"examples": len(order), "epochs": epochs, "batch_size": batch_size, "seed": seed,
            "learning_rate": learning_rate}  # what a saved state must have been trained under to go on from it
    losses = _resume(progress, model, optimizer, plan) if progress is not None else []
    done, step = len(losses), 0
    if checkpointing:
        _checkpointing(model, True)
    model.train()
    for epoch in range(epochs):
        random.Random(f"{seed}:{epoch}").shuffle(order)
        for ids, mask, labels in batches(order, batch_size, pad):
            step += 1
            if step <= done:  # learned before the stop
                continue
            loss = learned_loss(model, ids.to(model.device), mask.to(model.device), labels.to(model.device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
            if progress is not None and len(losses) % save_every == 0:
                _save_progress(progress, model, optimizer, losses, plan)
            if on_step:
                on_step(len(losses), losses[-1])
    if checkpointing:
        _checkpointing(model, False)
    model.eval()
    return losses


def _save_progress(path, model, optimizer, losses: list[float], plan: dict) -> None:
    """The trainable weights, the optimizer's moments, the random state (dropout) and the losses so far; written
    through :func:`~m3agent.files.outfolder.replacing`, so a stop while saving leaves the previous state whole."""
    import torch

    from m3agent.files.outfolder import replacing

    state = {"weights": {n: p.detach().clone() for n, p in _trainable(model).items()},
             "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state(), "losses": list(losses), "plan": plan}
    with replacing(path) as partial:
        torch.save(state, partial)


def _resume(path, model, optimizer, plan: dict) -> list[float]:
    """Load a saved state into ``model`` and ``optimizer``; the losses of the steps it holds ([] if none saved).
    A state saved under another plan (other episodes, seed, batch size) or for another adapter is refused."""
    import torch

    if not Path(path).is_file():
        return []
    state = torch.load(path, map_location="cpu", weights_only=True)  # tensors and numbers only, never code
    if state["plan"] != plan:
        raise WarmStartError(f"{path} was saved by another warm start ({state['plan']}, this one {plan}); remove it "
                             "to start the warm start over")
    trainable = _trainable(model)
    if set(trainable) != set(state["weights"]):
        raise WarmStartError(f"{path} was saved for another adapter (its weights have other names); remove it to "
                             "start the warm start over")
    with torch.no_grad():
        for name, weight in state["weights"].items():
            trainable[name].copy_(weight)
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
    return list(state["losses"])


def _trainable(model) -> dict:
    """The weights the warm start learns (the adapter's), by name."""
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


def _checkpointing(model, on: bool) -> None:
    """Recompute activations in the backward pass (``on``) or keep them: transformers 5 names it "activation
    checkpointing", earlier releases "gradient checkpointing"."""
    new = hasattr(model, "activation_checkpointing_enable")
    if not on:
        (model.activation_checkpointing_disable if new else model.gradient_checkpointing_disable)()
    elif new:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
