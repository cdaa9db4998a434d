"""Training: ``train-data`` (:mod:`m3agent.train.dataset`), ``train worlds`` (:mod:`m3agent.train.world_data`) and
``train control`` (:mod:`m3agent.train.control_run`)."""

from __future__ import annotations

import sys

from m3agent.cli.common import print_json
from m3agent.config import Config
from m3agent.errors import M3AgentError


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


def cmd_train(args, config: Config) -> int:
    if args.what == "worlds":
        from m3agent.train.world_data import write_worlds

        print_json(write_worlds(args.out, args.count, args.seed, config, render=args.render, photos_dir=args.photos,
                                hear=args.hear))
        return 0
    from dataclasses import replace

    from m3agent.train.control_run import ControlTraining, train_control

    plan = ControlTraining()
    plan = replace(plan, warm_tasks=args.warm_tasks, threads=args.threads, lessons=args.lessons,
                   corrections=args.corrections, clip_order=args.clip_order, from_adapter=args.from_adapter,
                   checkpointing=args.checkpointing,
                   grpo=replace(plan.grpo, steps=args.steps, generations=args.generations,
                                prompts_per_step=args.prompts, learning_rate=args.lr, seed=args.seed,
                                resample=args.resample))
    if not args.data:
        raise M3AgentError("train control needs --data: the train.parquet m3agent train-data wrote")
    if args.warm_tasks < 0:
        raise M3AgentError(f"--warm-tasks must be 0 (no warm start: GRPO only) or more (got {args.warm_tasks})")
    if args.resample < 0:
        raise M3AgentError(f"--resample must be 0 (off) or more (got {args.resample})")
    summary = train_control(config, args.data, args.out, plan, evidence=args.evidence, worked=args.worked,
                            queries=args.queries, notice=lambda text: print(text, file=sys.stderr))
    print_json({k: v for k, v in summary.items() if k not in ("warm_losses", "steps")} |
               {"last_steps": summary["steps"][-5:]})
    return 0


def add_commands(sub) -> None:
    from m3agent.train.clip_order import CLIP_ORDERS
    from m3agent.train.lessons import OWN_SHARE

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

    p = sub.add_parser("train", help="train on this machine: `worlds` writes synthetic training worlds (annotations "
                       "and their memories, disjoint from every benchmark); `control` trains the control model (a "
                       "LoRA adapter on the bundled SmolLM2: a warm start on gold episodes, then GRPO through TRL)")
    p.add_argument("what", choices=["worlds", "control"])
    p.add_argument("--out", required=True, help="worlds: the folder to write; control: the run folder (resumable)")
    p.add_argument("--count", type=int, default=500, help="worlds: how many")
    p.add_argument("--seed", type=int, default=7, help="worlds: the generator's seed; control: the run's seed")
    p.add_argument("--render", choices=["text", "video"], default="text",
                   help="worlds: text memories (cheap) or videos memorized by the real pipeline")
    p.add_argument("--photos", default=None, help="worlds --render video: a folder of face photos")
    p.add_argument("--hear", type=float, default=0.0,
                   help="worlds --render text: share of worlds stored as speech recognition hears their lines "
                        "(espeak-ng voices through the ASR backend, as in a video's memory)")
    p.add_argument("--data", default=None, help="control: train.parquet written by m3agent train-data")
    p.add_argument("--evidence", default=None, help="control: the worlds' evidence file (worlds.evidence.json)")
    p.add_argument("--worked", default=None,
                   help="control: answers the warm start gives with their working (worlds.worked.json)")
    p.add_argument("--queries", default=None,
                   help="control: what the warm start searches for a question's second hop (worlds.queries.json)")
    p.add_argument("--warm-tasks", type=int, default=256,
                   help="control: gold episodes of the warm start (0: none, GRPO only)")
    p.add_argument("--lessons", type=float, default=0.3,
                   help="control: share of questions shown feedback lessons (others' corrections; 0: none)")
    p.add_argument("--corrections", type=float, default=OWN_SHARE,
                   help="control: of the questions shown lessons, the share also shown a correction of their own "
                        "(half of them with the evidence hidden, a quarter overruling memory's answer)")
    p.add_argument("--clip-order", choices=list(CLIP_ORDERS), default="search",
                   help="control: search results shown in the search's order while training (as in use) or "
                        "shuffled, so the model reads the lines rather than learning where the answer usually is")
    p.add_argument("--from-adapter", default="", metavar="PATH",
                   help="control: go on training this PEFT adapter (\"bundled\": the shipped one) instead of a new one")
    p.add_argument("--checkpointing", action="store_true",
                   help="control: recompute activations in the warm start's backward pass instead of keeping them: "
                        "about 0.4x the memory on long episodes for 1.4x the time (for machines under 24 GB)")
    p.add_argument("--steps", type=int, default=40, help="control: GRPO steps")
    p.add_argument("--prompts", type=int, default=2, help="control: questions a GRPO step")
    p.add_argument("--generations", type=int, default=4, help="control: episodes a question (GRPO's group)")
    p.add_argument("--lr", type=float, default=2e-5, help="control: GRPO's learning rate")
    p.add_argument("--resample", type=int, default=0,
                   help="control: DAPO's dynamic sampling, fresh question groups a step may draw to replace groups "
                        "whose episodes all scored alike (they teach nothing); 0: off")
    p.add_argument("--threads", type=int, default=0, help="control: torch threads (0: torch's choice)")
    p.set_defaults(func=cmd_train)
