"""Warm start: peak memory and step time of one batch, activations kept or recomputed in the backward pass.

Usage: ``python -m bench.perf_warm_start [--tokens 500 1500] [--write docs/BENCHMARKS.md]``.

Each measurement runs in a fresh process (the peak resident set is per process): the bundled SmolLM2-135M in
float32 with the default LoRA adapter, then warm-start steps on a batch of 4 episodes of ``tokens`` tokens whose
last tenth is the model's own (learned) tokens, as `m3agent train control` runs them on 2 threads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

BATCH = 4
STEPS = 3  # the first step also warms up allocations; the median of the rest is quoted


def measure(tokens: int, checkpointing: bool, steps: int = STEPS) -> dict:
    """One process's peak memory and step seconds (run in this process: call it through :func:`in_fresh_process`)."""
    import time

    import torch

    from bench.perf_memory import peak_rss_mb
    from m3agent.train.policy import LoraSettings, load_base, with_adapter
    from m3agent.train.rollouts import Rollout
    from m3agent.train.sft import warm_start

    _, base = load_base(threads=2)
    model = with_adapter(base, LoraSettings())
    loaded = peak_rss_mb() * 1024 / 1e6  # MiB to GB, the unit docs quote
    generator = torch.Generator().manual_seed(0)
    learned = tokens // 10  # the model's replies: the rest (prompt, search results) is not learned
    examples = [Rollout(torch.randint(0, 40_000, (tokens - learned,), generator=generator).tolist(),
                        torch.randint(0, 40_000, (learned,), generator=generator).tolist(), [1] * learned)
                for _ in range(BATCH)]
    seconds = []
    for _ in range(steps):
        started = time.perf_counter()
        warm_start(model, examples, pad=0, batch_size=BATCH, checkpointing=checkpointing)
        seconds.append(time.perf_counter() - started)
    return {"tokens": tokens, "checkpointing": checkpointing, "loaded_gb": round(loaded, 2),
            "peak_gb": round(peak_rss_mb() * 1024 / 1e6, 2),
            "step_seconds": round(statistics.median(seconds[1:] or seconds), 2)}


def in_fresh_process(tokens: int, checkpointing: bool) -> dict:
    code = f"import json; from bench.perf_warm_start import measure; print(json.dumps(measure({tokens}, {checkpointing})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def render(rows: list[dict]) -> str:
    from bench.perf_memory import machine

    lines = [f"Machine: {machine()}. Date: {date.today().isoformat()}. Command: `python -m bench.perf_warm_start "
             "--write docs/BENCHMARKS.md`.", "",
             f"One warm-start step of {BATCH} episodes (SmolLM2-135M, float32, LoRA rank 16 on q/k/v/o, 2 threads), "
             "each in a fresh process; peak = the process's peak resident set.", "",
             "| tokens an episode | activations | peak memory | step (median) |", "|---|---|---|---|"]
    by_key = {(r["tokens"], r["checkpointing"]): r for r in rows}
    for (tokens, recomputed), r in sorted(by_key.items()):
        lines.append(f"| {tokens} | {'recomputed (--checkpointing)' if recomputed else 'kept (default)'} | {r['peak_gb']:.1f} GB "
                     f"| {r['step_seconds']:.1f} s |")
    lines.append("")
    for tokens in sorted({t for t, _ in by_key}):
        kept, recomputed = by_key.get((tokens, False)), by_key.get((tokens, True))
        if kept and recomputed:
            lines.append(f"- {tokens} tokens: recomputing needs {recomputed['peak_gb'] / kept['peak_gb']:.2f}x the "
                         f"memory and {recomputed['step_seconds'] / kept['step_seconds']:.2f}x the time of keeping.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[500, 1500])
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for tokens in args.tokens:
        for checkpointing in (False, True):
            rows.append(in_fresh_process(tokens, checkpointing))
            print(json.dumps(rows[-1]), flush=True)
    print(render(rows))
    if args.write:
        from bench.markers import replace_block

        replace_block(args.write, "perf_warm_start", render(rows))


if __name__ == "__main__":
    main()
