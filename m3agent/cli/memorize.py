"""Videos into memory: ``memorize`` (one video, :mod:`m3agent.jobs.memorize`) and ``memorize-batch``
(many, :mod:`m3agent.jobs.batch`)."""

from __future__ import annotations

import sys

from m3agent.cli.common import EXIT_USAGE, print_json, warn
from m3agent.config import Config


def cmd_memorize(args, config: Config) -> int:
    from m3agent.jobs.memorize import MemorizeInterrupted, memorize_file

    try:
        report = memorize_file(args.video, args.memory, config, name=args.name, log=args.log, events=args.events,
                               progress=not args.quiet, build_sample=args.build_sample)
    except MemorizeInterrupted as stop:
        print(f"interrupted: {stop.saved} clips are saved in {args.memory}; run the same command to resume",
              file=sys.stderr)
        return 130
    print_json(report.to_dict())
    if report.truncated:  # what could be read is memorized (exit 0), but the rest of the file is missing
        warn("memorize", f"warning: {args.video} {report.note}")
    return 0


def cmd_memorize_batch(args, config: Config) -> int:
    from m3agent.jobs.batch import (
        plan_jobs,
        read_video_list,
        run_local,
        run_ray,
        save_status,
        summary_table,
    )

    jobs = plan_jobs(read_video_list(args.list), args.memory_dir)
    if not jobs:
        print("m3agent memorize-batch: the list holds no video", file=sys.stderr)
        return EXIT_USAGE
    from tqdm import tqdm

    bar = tqdm(total=len(jobs), unit="video", disable=args.quiet)

    def on_status(status) -> None:
        bar.update(1)
        bar.set_postfix_str(f"{status.name}: {status.status}")

    if args.ray:
        results = run_ray(jobs, config, args.ray, args.retries, on_status=on_status)
    else:
        results = run_local(jobs, config, args.workers, args.retries, on_status=on_status)
    bar.close()
    summary = save_status(results, args.memory_dir)
    if args.json:
        print_json(summary)
    else:
        print(summary_table(results))
    return 0 if all(r.status != "failed" for r in results) else 1


def add_commands(sub) -> None:
    p = sub.add_parser("memorize", help="turn a video into memory (resumes where it stopped)")
    p.add_argument("video")
    p.add_argument("--memory", required=True, help="memory DB (created if missing)")
    p.add_argument("--name", default=None, help="video name in the DB (default: file name)")
    p.add_argument("--log", default=None, help="JSON-lines log of per-clip stage timings")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--events", default=None, help="JSON-lines file of progress events (stages per clip), "
                   "appended as the run goes; m3agent.memorize.progress.read_progress reads it")
    p.add_argument("--build-sample", action="store_true",
                   help="build the shipped sample episode at VIDEO first when it is missing")
    p.set_defaults(func=cmd_memorize)

    p = sub.add_parser("memorize-batch", help="memorize many videos, one DB each (local workers or Ray)")
    p.add_argument("list", help="text file: a video path per line (or JSON lines with video, name)")
    p.add_argument("--memory-dir", required=True)
    p.add_argument("--workers", type=int, default=1, help="local worker processes")
    p.add_argument("--ray", default=None, metavar="ADDRESS", help="run on a Ray cluster ('local' starts one here)")
    p.add_argument("--retries", type=int, default=1)
    p.add_argument("--json", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_memorize_batch)
