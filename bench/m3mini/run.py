"""Run the mini M3-Bench end to end: build its videos, memorize them, answer and judge every question.

Usage (from the repository root)::

    python -m bench.m3mini.run                       # the embedded stack (SmolLM2-135M with the trained adapter)
    python -m bench.m3mini.run --control untrained   # the same model without the adapter
    python -m bench.m3mini.run --control scripted    # a scripted answerer: the retrieved line closest to the question
    python -m bench.m3mini.run --write docs/RESULTS.md --plot docs/m3mini_accuracy.png

Everything goes under ``bench/.cache/m3mini`` (videos and memories are built once and reused; each control
model has its own results folder, so a re-run resumes). It runs ``m3agent bench m3`` itself, so the numbers
are the harness's. ``--write`` replaces this benchmark's section of ``docs/RESULTS.md`` with the report.

The scripted answerer is no language model: it answers with the memory line, among those its searches
returned, that shares the most words with the question. Scored by the offline judge it measures whether
memorization and search bring the answer's words back, not reasoning.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from bench.markers import replace_block  # noqa: E402
from m3agent.control.text import KNOWLEDGE_PREFIX  # noqa: E402
from m3agent.models.llm.scripted import ScriptedChat  # noqa: E402

HERE = Path(__file__).resolve().parent
ANNOTATIONS = HERE / "m3mini.json"
CACHE = ROOT / "bench" / ".cache" / "m3mini"
_WORD = re.compile(r"[a-z0-9]+")
_QUIET = {"the", "a", "an", "is", "are", "was", "what", "who", "where", "when", "which", "how", "does", "did", "do",
          "in", "on", "at", "of", "to", "and", "or", "for", "it", "that", "this", "video", "says", "say", "said"}


def closest_line(messages: list[dict]) -> str:
    """The scripted answerer's reply: the note line sharing most words with the question (none: "unknown")."""
    question = messages[-1]["content"].rsplit("Question:", 1)[-1]
    wanted = set(_WORD.findall(question.lower())) - _QUIET
    best, score = "unknown", 0
    for message in messages:
        content = message.get("content", "")
        if message["role"] != "user" or not content.startswith(KNOWLEDGE_PREFIX):
            continue
        for line in content.split("\n\n", 1)[0].splitlines()[1:]:
            if line.startswith("- "):
                overlap = len(wanted & set(_WORD.findall(line.lower())))
                if overlap > score:
                    best, score = line[2:], overlap
    return f"Action: [Answer]\nContent: {best}"


def run(control: str, out: Path, quiet: bool = False, cache: Path = CACHE, feedback: float | None = None) -> dict:
    """One control model over the benchmark; with ``feedback`` (a correction rate, or -1 for the action
    model's), the two-pass feedback comparison of ``bench m3 --feedback`` instead."""
    from bench.m3mini.build import build
    from m3agent.cli import main

    videos = cache / "videos"
    build(videos)
    args = ["bench", "m3", "--annotations", str(ANNOTATIONS), "--memories", str(cache / "memories"), "--videos",
            str(videos), "--out", str(out), "--title", f"mini M3-Bench ({control} control)"]
    overrides = CONTROLS[control]
    _drop_if_other_adapter(out, overrides)
    if feedback is not None:
        args += ["--feedback"] + (["--correction-rate", str(feedback)] if feedback >= 0 else [])
    code = main(overrides + args + (["--quiet"] if quiet else []))
    if code != 0:
        raise SystemExit(f"m3agent bench m3 failed with exit code {code}")
    return json.loads((out / ("feedback.json" if feedback is not None else "summary.json")).read_text())


def _drop_if_other_adapter(out: Path, overrides: list[str]) -> None:
    """This runner's results folder for a control model is its own: when the adapter file that model applies has
    changed since (a newly shipped adapter), the old answers go and the run starts over (``bench m3`` would refuse
    the folder rather than reuse them)."""
    from m3agent.config import load_config
    from m3agent.files.outfolder import MARKER
    from m3agent.jobs.m3bench import adapter_identity

    marker = out / MARKER
    if not marker.is_file():
        return
    before = (json.loads(marker.read_text("utf-8")).get("belongs") or {}).get("control.chat.adapter file")
    config = load_config(None, {}, overrides[1::2])  # ["--set", "k=v", ...]
    if before != adapter_identity(config.control.chat):
        shutil.rmtree(out)


#: control model -> the settings that pick it: the shipped trained adapter (the default), the bundled model without
#: it, or the scripted answerer
CONTROLS = {"embedded": [], "untrained": ["--set", "control.chat.adapter="],
            "scripted": ["--set", "control.chat.backend=bench.m3mini.run:ClosestLineChat"]}


class ClosestLineChat(ScriptedChat):
    """The scripted answerer as a chat backend (``control.chat.backend=bench.m3mini.run:ClosestLineChat``)."""

    name = "closest-line"

    @classmethod
    def from_config(cls, config) -> ClosestLineChat:
        return cls(closest_line)


def write_section(results: Path, summaries: dict[str, Path], plot: Path | None) -> None:
    """Replace the mini benchmark's section of ``results`` (between its markers) with the fresh reports."""
    parts = []
    for control, out in summaries.items():
        report = (out / "report.md").read_text().split("\n", 1)[1]  # without its title line
        report = re.sub(r"!\[per-type accuracy\]\([^)]*\)\n\n", "", report)
        parts += [f"#### Control: {control}", report.strip(), ""]
    if plot is not None:
        parts += [f"![mini M3-Bench accuracy per type]({plot.name})", ""]
    replace_block(results, "m3mini", "\n".join(parts))


def write_feedback_section(results: Path, runs: dict[str, dict]) -> None:
    """Replace the feedback section of ``results`` (between its markers) with these runs' comparison."""
    parts = ("later questions", "second half", "asked again")
    rows = ["| run | later questions: without / with feedback memory | second half: without / with | every question "
            "asked again: without / with | lessons | corrections |", "|---|---|---|---|---|---|"]
    for label, r in runs.items():
        cells = [f"{r[part]['without']['correct']}/{r[part]['without']['questions']} / "
                 f"{r[part]['with']['correct']}/{r[part]['with']['questions']}" if part in r else "-" for part in parts]
        rows.append(f"| {label} | {' | '.join(cells)} | {r['lessons stored']} | {r['corrections']} |")
    replace_block(results, "m3mini-feedback", "\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--control", nargs="+", default=["embedded"], choices=list(CONTROLS))
    parser.add_argument("--write", type=Path, default=None, help="update this results file (docs/RESULTS.md)")
    parser.add_argument("--plot", type=Path, default=None, help="copy the first run's per-type plot here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--feedback", type=float, nargs="+", default=None, metavar="RATE",
                        help="feedback runs instead (bench m3 --feedback) at these correction rates; -1: the action "
                             "model's; --write then updates the feedback section")
    args = parser.parse_args()
    if args.feedback is not None:
        runs = {}
        for control in args.control:
            for rate in args.feedback:
                label = f"{control}, corrections {'from the action model' if rate < 0 else f'at rate {rate:g}'}"
                out = CACHE / f"out-{control}-feedback-{'model' if rate < 0 else f'{rate:g}'}"
                runs[label] = run(control, out, args.quiet, feedback=rate)
                later = runs[label]["later questions"]
                print(f"{label}: later questions {later['without']['correct']}/{later['without']['questions']} "
                      f"without feedback memory, {later['with']['correct']}/{later['with']['questions']} with it")
        if args.write is not None:
            write_feedback_section(args.write, runs)
        return
    outs = {}
    for control in args.control:
        outs[control] = CACHE / f"out-{control}"
        summary = run(control, outs[control], args.quiet)
        overall = summary["overall"]
        print(f"{control}: accuracy {100 * overall['correct'] / overall['total']:.1f}% "
              f"({overall['correct']}/{overall['total']})")
    if args.plot is not None:
        shutil.copyfile(outs[args.control[0]] / "accuracy_by_type.png", args.plot)
    if args.write is not None:
        write_section(args.write, outs, args.plot)


if __name__ == "__main__":
    main()
