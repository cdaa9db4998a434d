"""Benchmarks: ``bench m3`` (M3-Bench or VideoMME, :mod:`m3agent.jobs.m3bench`) and ``bench memorybench``
(:mod:`m3agent.jobs.memorybench`)."""

from __future__ import annotations

import sys
from pathlib import Path

from m3agent.cli.common import EXIT_USAGE, print_json
from m3agent.config import Config


def cmd_bench_m3(args, config: Config) -> int:
    from tqdm import tqdm

    from m3agent.jobs import m3bench

    request = m3bench.M3BenchRequest(
        annotations=args.annotations, memories=args.memories, out=args.out, videos=args.videos, limit=args.limit,
        format=args.format, duration=args.duration, evidence=args.evidence, title=args.title, feedback=args.feedback,
        correction_rate=args.correction_rate, overrides=tuple(args.overrides))
    items, questions = m3bench.select_questions(request, config)
    if not items:
        print(f"m3agent bench m3: error: {args.annotations} holds no question", file=sys.stderr)
        return EXIT_USAGE
    m3bench.check_paths(request)
    out = Path(args.out)
    bar = tqdm(total=len(items), unit="question", disable=args.quiet)
    setup = m3bench.bench_setup(request, config, questions, progress=bar.update,
                                notice=lambda text: bar.write(text) if not args.quiet else None)
    context = m3bench.run_context(request, config)
    if args.feedback:
        from m3agent.jobs.m3bench_feedback import run_feedback_bench

        bar.total = 2 * len(items)
        try:
            result = run_feedback_bench(items, setup, benchmark=request.benchmark, context=context,
                                        correction_rate=args.correction_rate)
        except m3bench.BenchInterrupted:
            bar.close()
            print("interrupted: run the same command to resume", file=sys.stderr)
            return 130
        bar.close()
        if args.json:
            print_json(result)
        for part in ("later questions", "second half"):
            a, b = result[part]["without"], result[part]["with"]
            print(f"{part}: without feedback memory {a['correct']}/{a['questions']}, with it {b['correct']}/{b['questions']}")
        print(f"report: {out / 'feedback.md'}")
        return 0
    try:
        summary = m3bench.run_bench(items, setup, benchmark=request.benchmark, context=context)
    except m3bench.BenchInterrupted as stop:
        bar.close()
        print(f"interrupted: {stop.saved} results saved in {m3bench.results_path(out)}; run the same command to "
              "resume", file=sys.stderr)
        return 130
    bar.close()
    if args.json:
        print_json(summary.to_dict())
    overall = summary.overall
    print(f"accuracy {100 * overall.accuracy:.1f}% ({overall.correct}/{overall.total}); {overall.answered} answered, "
          f"{overall.total - overall.answered} not answered; report: {out / 'report.md'}")
    return 0


def cmd_bench_memorybench(args, config: Config) -> int:
    from tqdm import tqdm

    from m3agent.jobs.memorybench import (
        memorybench_setup,
        run_context,
        run_memorybench,
        select_records,
    )

    data, records, whole = select_records(args.data, args.datasets)
    bar = tqdm(unit="answer", disable=args.quiet)
    setup = memorybench_setup(data, args.out, config, whole, systems=args.systems, progress=bar.update,
                              notice=lambda text: bar.write(text) if not args.quiet else None)
    command = "m3agent " + " ".join(sys.argv[1:]) if sys.argv else "m3agent bench memorybench"
    summary = run_memorybench(records, args.driver, setup, run_context(setup, command))
    bar.close()
    if args.json:
        print_json(summary)
    else:
        print(Path(args.out) / "report.md")
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("bench", help="benchmarks: answer, judge and report (resumable)")
    bench = p.add_subparsers(dest="bench", required=True)
    p = bench.add_parser("m3", help="M3-Bench (robot.json, web.json) or VideoMME-style multiple choice")
    p.add_argument("--annotations", required=True, help="M3-Bench JSON, or VideoMME JSON / JSON lines / Parquet")
    p.add_argument("--memories", required=True, help="folder of memories: VIDEO.db, or M3-Agent's VIDEO.pkl")
    p.add_argument("--out", required=True, help="folder for results.jsonl, report.md, summary.json and the plot")
    p.add_argument("--videos", default=None, help="folder of videos: one without a memory is memorized first")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument("--format", default="auto", choices=["auto", "m3bench", "videomme"])
    p.add_argument("--duration", default=None, choices=["short", "medium", "long"],
                   help="VideoMME: only questions on videos of this length (the paper's VideoMME-long: long)")
    p.add_argument("--evidence", default=None, help="JSON {question_id: [clip, ...]} (default: NAME.evidence.json beside)")
    p.add_argument("--title", default=None, help="the report's title (default: the annotation file's name)")
    p.add_argument("--json", action="store_true", help="also print the summary as JSON")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--feedback", action="store_true",
                   help="a simulated user's feedback after each answer, kept as procedural memory; compares later "
                        "questions with and without it (OUT/without, OUT/with, OUT/feedback.md)")
    p.add_argument("--correction-rate", type=float, default=None, metavar="P",
                   help="with --feedback: how often a wrong answer is corrected with the reference "
                        "(default: the action model's dislike probability)")
    p.set_defaults(func=cmd_bench_m3)

    p = bench.add_parser("memorybench", help="MemoryBench: memory systems fed by a driver, scored with user feedback")
    p.add_argument("--data", default=None, help="records: JSON lines, JSON, Parquet, or the published dataset folder "
                   "(default: $MEMORY_BENCH_PATH); corpora from corpus/ beside or inside it")
    p.add_argument("--driver", required=True, choices=["off-policy", "stepwise", "on-policy"])
    p.add_argument("--out", required=True, help="folder for results.jsonl, lived.jsonl, report.md, summary.json, memories/")
    p.add_argument("--systems", default=None, help="comma-separated: core, bm25-m, bm25-s, embed-m, embed-s")
    p.add_argument("--datasets", default=None, help="comma-separated dataset names (default: all in --data)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_bench_memorybench)
