"""The MemoryBench fixture through every driver and system, scores written to docs/RESULTS.md.

Usage: ``python -m bench.memorybench_fixture [--write docs/RESULTS.md]``.

The fixture (tests/data/memorybench: 22 records written for this project in the published schema, a Locomo
conversation in the published corpus layout) covers the four task formats and both feedback paths. The
systems remember with the bundled MiniLM; the answering model is scripted: it answers with the first memory
line it is shown, so the scores compare what each system's memory brings back, not a language model. The
simulated user (LLM path) and the judge are scripted too (a satisfied user; grade 4 of 5 or 10). These
numbers check the harness end to end; they are not MemoryBench results, which need the published data
and a real model behind the ``openai`` backend.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FIXTURE = ROOT / "tests" / "data" / "memorybench"
USER = '{"reasoning": "fine", "satisfaction_score": 8, "behavior": "end_conversation", "response": null}'


def first_memory(messages):
    lines = [line[2:] for line in messages[0]["content"].splitlines() if line.startswith("- ")]
    return lines[0].split(": ", 1)[-1] if lines else "I do not know"


def run_all(out: Path) -> dict:
    from m3agent.config import EmbedderConfig, load_config
    from m3agent.eval.memorybench.records import load_records
    from m3agent.factory import build_embedder
    from m3agent.jobs.memorybench import MemoryBenchSetup, run_memorybench
    from m3agent.models.llm.scripted import ScriptedChat

    embedder = build_embedder(EmbedderConfig())
    records = load_records(FIXTURE / "records.jsonl")
    config = load_config(None, {}, ["bench.memorybench.batch=4", "bench.memorybench.steps=2"])
    results = {}
    for driver in ("off-policy", "stepwise", "on-policy"):
        setup = MemoryBenchSetup(out=out / driver, config=config, embedder=lambda: embedder,
                                 chat=lambda: ScriptedChat(first_memory), user=lambda: ScriptedChat([USER]),
                                 judge=lambda: ScriptedChat(["4"]), corpus_dir=FIXTURE / "corpus")
        results[driver] = run_memorybench(records, driver, setup)
    return results


def render(results: dict) -> str:
    lines = ["Micro mean of normalized scores per domain and task format at each driver's last step "
             "(5 test cases; `python -m bench.memorybench_fixture --write docs/RESULTS.md`).", ""]
    groups = ["Open-Domain", "Legal", "LiSo", "SiLo", "LiLo", "SiSo"]
    lines += ["| driver | system | " + " | ".join(groups) + " | memory s / case | predict s (p50) |",
              "|---|---|" + "---|" * len(groups) + "---|---|"]
    for driver, summary in results.items():
        for name, entry in summary["systems"].items():
            last = list(entry["steps"].values())[-1]
            cells = " | ".join(f"{last['normalized'].get(g, float('nan')):.3f}" for g in groups)
            lines.append(f"| {driver} | {name} | {cells} | {entry['memory_seconds_per_case']} | "
                         f"{last['predict_seconds_p50']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = run_all(Path(tmp))
    block = render(results)
    print(block)
    print(json.dumps({d: s["systems"]["core"]["steps"] for d, s in results.items()}, indent=1)[:2000])
    if args.write:
        from bench.markers import replace_block

        replace_block(args.write, "memorybench-fixture", block)


if __name__ == "__main__":
    main()
