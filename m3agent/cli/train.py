"""Training data: ``train-data`` (:mod:`m3agent.train.dataset`)."""

from __future__ import annotations

import sys

from m3agent.cli.common import print_json
from m3agent.config import Config


def cmd_train_data(args, config: Config) -> int:
    from m3agent.train.dataset import TrainDataRequest, build_train_data

    request = TrainDataRequest(out=args.out, task=args.task, annotations=args.annotations, memories=args.memories,
                               tasks=args.tasks, memorybench=args.memorybench, val_fraction=args.val_fraction,
                               seed=args.seed)
    summary = build_train_data(request, config, notice=lambda text: print(text, file=sys.stderr))
    unit, group = ("questions", "videos") if args.task == "control" else ("tasks", "questions")
    if args.json:
        print_json({k: v for k, v in summary.items() if k != "problems"})
    else:
        skipped = ", ".join(f"{n} {reason}" for reason, n in summary["skipped"].items()) or "none"
        print(f"{summary['train']} train {unit} ({summary[f'train_{group}']} {group}), {summary['val']} validation "
              f"({summary[f'val_{group}']} {group}); skipped: {skipped}; in {args.out} (summary.json says why)")
    return 0 if summary["train"] + summary["val"] else 1


def add_commands(sub) -> None:
    p = sub.add_parser("train-data", help="training tasks as verl Parquet: control questions (M3-Bench annotations + "
                       "memory DBs, split by video) or memory-build streams (split by task)")
    p.add_argument("--task", choices=["control", "memory-build"], default="control",
                   help="what the rows train: the control process (default) or the memory-construction policy")
    p.add_argument("--annotations", default=None, help="control: M3-Bench JSON (robot.json, web.json)")
    p.add_argument("--memories", default=None, help="control: folder of memory DBs, VIDEO.db")
    p.add_argument("--tasks", default=None, help="memory-build: JSON lines of {id, chunks, questions}")
    p.add_argument("--memorybench", default=None, metavar="DATA",
                   help="memory-build: MemoryBench records (as bench memorybench --data); one task per corpus "
                        "conversation, its questions held out")
    p.add_argument("--out", required=True, help="folder for train.parquet, val.parquet and summary.json")
    p.add_argument("--val-fraction", type=float, default=None,
                   help="share of videos (control) or tasks (memory-build) held out (train.val_fraction)")
    p.add_argument("--seed", type=int, default=None, help="seed of the split (train.seed)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_train_data)
