"""The benchmark report: accuracy overall, per question type and per video, with counts; latency, tokens and
rounds per question; how often a search reached the evidence clip; every unanswered question's reason.

Accuracy counts every question asked of the benchmark: one with no answer (no memory, a failed model, a
judge with no verdict) is not right. Written as Markdown, JSON and a PNG bar chart of per-type accuracy.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from m3agent.files.private import open_private


@dataclass
class Tally:
    total: int = 0
    answered: int = 0  # an answer came back (judged or not)
    correct: int = 0

    def add(self, record: dict) -> None:
        self.total += 1
        self.answered += record.get("answer") is not None and not record.get("error")
        self.correct += is_correct(record)

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "accuracy": round(self.accuracy, 4)}


@dataclass
class Summary:
    benchmark: str
    judge: str
    overall: Tally = field(default_factory=Tally)
    by_type: dict[str, Tally] = field(default_factory=dict)
    by_video: dict[str, Tally] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # p50, p90 per answered question
    tokens: dict[str, float] = field(default_factory=dict)
    rounds: dict[str, float] = field(default_factory=dict)  # mean, and how many questions used 1, 2, ...
    evidence: dict[str, float] = field(default_factory=dict)  # known, reached, rate
    #: judged free answers checked; invented; wrong; both; given as a quoted note instead; of those, right
    grounding: dict[str, int] = field(default_factory=dict)
    unjudged: int = 0  # answered, but the judge gave no verdict
    failures: dict[str, dict] = field(default_factory=dict)  # stage -> count and one example reason

    def to_dict(self) -> dict:
        out = asdict(self)
        for key in ("overall",):
            out[key] = getattr(self, key).to_dict()
        for key in ("by_type", "by_video"):
            out[key] = {name: tally.to_dict() for name, tally in getattr(self, key).items()}
        return out


def is_correct(record: dict) -> bool:
    verdict = record.get("verdict") or {}
    return not record.get("error") and verdict.get("correct") is True


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return {"p50": round(statistics.median(ordered), 3), "p90": round(p90, 3), "n": len(ordered)}


def summarize(records: Iterable[dict], benchmark: str, judge: str) -> Summary:
    summary = Summary(benchmark, judge)
    seconds, tokens, rounds = [], [], []
    known = reached = 0
    grounding = Counter()
    failures: dict[str, Counter] = defaultdict(Counter)
    for record in records:
        summary.overall.add(record)
        for kind in record.get("types") or ["(no type)"]:
            summary.by_type.setdefault(kind, Tally()).add(record)
        summary.by_video.setdefault(str(record.get("video")), Tally()).add(record)
        if record.get("error"):
            failures[record.get("stage") or "answer"][_reason(record)] += 1
            continue
        if record.get("answer") is None:
            continue
        seconds.append(float(record.get("seconds") or 0.0))
        tokens.append(float(record.get("tokens") or 0))
        rounds.append(int(record.get("model_rounds") or 0))
        if (record.get("verdict") or {}).get("correct") is None:
            summary.unjudged += 1
            failures["judge (answered, no verdict)"][(record.get("verdict") or {}).get("reason") or "not judged yet"] += 1
        verdict = (record.get("verdict") or {}).get("correct")
        if "unfound" in record and verdict is not None:
            grounding.update(checked=1, invented=bool(record["unfound"]), wrong=not verdict,
                             wrong_invented=not verdict and bool(record["unfound"]),
                             quoted="quoted" in record, quoted_right="quoted" in record and verdict)
        if record.get("evidence"):
            known += 1
            reached += bool(set(record["evidence"]) & set(record.get("clips") or []))
    summary.by_type = dict(sorted(summary.by_type.items()))
    summary.seconds, summary.tokens = _percentiles(seconds), _percentiles(tokens)
    if rounds:
        summary.rounds = {"mean": round(statistics.mean(rounds), 2),
                          **{str(k): v for k, v in sorted(Counter(rounds).items())}}
    if known:
        summary.evidence = {"known": known, "reached": reached, "rate": round(reached / known, 4)}
    if grounding:
        summary.grounding = {key: grounding[key] for key in ("checked", "invented", "wrong", "wrong_invented",
                                                             "quoted", "quoted_right")}
    summary.failures = {stage: {"count": sum(c.values()), "reasons": dict(c.most_common(5))}
                        for stage, c in sorted(failures.items())}
    return summary


def _reason(record: dict) -> str:
    """The error with the video's own name taken out, so that one cause over many videos counts once."""
    text = str(record.get("error"))
    video = str(record.get("video") or "")
    return text.replace(repr(video), "<video>").replace(video, "<video>") if video else text


def _pct(tally: Tally) -> str:
    return f"{100 * tally.accuracy:.1f}% ({tally.correct}/{tally.total})"


def markdown(summary: Summary, *, title: str = "", context: dict[str, str] | None = None,
             plot: str | None = None, max_videos: int = 50) -> str:
    out = [f"# {title or summary.benchmark}", ""]
    for key, value in (context or {}).items():
        out.append(f"- **{key}**: {value}")
    out += [f"- **judge**: {summary.judge}", "",
            f"**Accuracy: {_pct(summary.overall)}**; {summary.overall.answered} answered, "
            f"{summary.unjudged} answered without a verdict, "
            f"{summary.overall.total - summary.overall.answered} not answered (reasons below).", ""]
    if plot:
        out += [f"![per-type accuracy]({plot})", ""]
    out += ["| question type | accuracy | right | questions | answered |", "|---|---|---|---|---|"]
    out += [f"| {name} | {100 * t.accuracy:.1f}% | {t.correct} | {t.total} | {t.answered} |"
            for name, t in summary.by_type.items()]
    out += ["", "A question counts for each of its types.", ""]
    if summary.seconds:
        out += ["| per answered question | p50 | p90 |", "|---|---|---|",
                f"| seconds | {summary.seconds['p50']:.2f} | {summary.seconds['p90']:.2f} |",
                f"| tokens | {summary.tokens['p50']:.0f} | {summary.tokens['p90']:.0f} |", ""]
        spread = ", ".join(f"{k}: {v}" for k, v in summary.rounds.items() if k != "mean")
        out += [f"Model rounds per question: mean {summary.rounds['mean']:.2f} (questions by rounds used: {spread}).", ""]
    if summary.evidence:
        e = summary.evidence
        out += [f"Evidence reached: a search returned an annotated evidence clip for {e['reached']:.0f} of "
                f"{e['known']:.0f} answered questions whose evidence is known ({100 * e['rate']:.0f}%).", ""]
    if summary.grounding:
        g = summary.grounding
        out += [f"Grounding: invented (a word that neither the notes shown nor the question hold) in {g['invented']} "
                f"of {g['checked']} judged answers; of the {g['wrong']} wrong answers, invented {g['wrong_invented']}, "
                f"made of the notes' own words {g['wrong'] - g['wrong_invented']} (a wrong line or number read).", ""]
        if g.get("quoted"):
            out += [f"Quoted: {g['quoted']} of the answers given are the note nearest the question, given in place "
                    f"of an answer the model mostly invented (`control.quote_invented`); {g['quoted_right']} of them "
                    "judged right.", ""]
    if summary.failures:
        out += ["| not answered: stage | questions | most common reasons |", "|---|---|---|"]
        for stage, info in summary.failures.items():
            reasons = "; ".join(f"{r} ({n})" for r, n in info["reasons"].items()).replace("|", "\\|")
            out.append(f"| {stage} | {info['count']} | {reasons[:600]} |")
        out.append("")
    videos = sorted(summary.by_video.items(), key=lambda kv: kv[0])
    out += ["| video | accuracy | right | questions | answered |", "|---|---|---|---|---|"]
    out += [f"| {name} | {100 * t.accuracy:.1f}% | {t.correct} | {t.total} | {t.answered} |"
            for name, t in videos[:max_videos]]
    if len(videos) > max_videos:
        out.append(f"\n{len(videos) - max_videos} more videos in summary.json.")
    return "\n".join(out) + "\n"


def plot_types(summary: Summary, path: str | Path, *, title: str = "") -> Path:
    """Per-type accuracy bars with their counts, and the overall accuracy as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary.by_type)
    values = [100 * summary.by_type[n].accuracy for n in names]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(names) + 1.8))
    bars = ax.barh(names, values, color="#4c72b0")
    for bar, name in zip(bars, names):
        t = summary.by_type[name]
        ax.text(bar.get_width() + 1, bar.get_y() + bar.get_height() / 2, f"{bar.get_width():.1f}% ({t.correct}/{t.total})",
                va="center", fontsize=9)
    ax.axvline(100 * summary.overall.accuracy, color="#c44e52", linestyle="--",
               label=f"overall {100 * summary.overall.accuracy:.1f}% ({summary.overall.correct}/{summary.overall.total})")
    ax.set_xlim(0, 115)
    ax.set_xlabel("accuracy (%)")
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or f"{summary.benchmark}: accuracy per question type\njudge: {summary.judge}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(records: Iterable[dict], out_dir: str | Path, benchmark: str, judge: str, *,
                 context: dict[str, str] | None = None) -> Summary:
    """``report.md``, ``summary.json`` and ``accuracy_by_type.png`` in ``out_dir``."""
    out_dir = Path(out_dir)
    summary = summarize(records, benchmark, judge)
    plot = plot_types(summary, out_dir / "accuracy_by_type.png") if summary.by_type else None
    text = markdown(summary, context=context, plot=plot.name if plot else None)
    with open_private(out_dir / "report.md", "w", encoding="utf-8") as fh:
        fh.write(text)
    with open_private(out_dir / "summary.json", "w", encoding="utf-8") as fh:
        json.dump({**summary.to_dict(), "context": context or {}}, fh, indent=1, ensure_ascii=False)
    return summary
