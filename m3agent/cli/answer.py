"""Answers from memory: ``ask`` (one question), ``qa`` (a file of them, batched and resumable), ``demo``."""

from __future__ import annotations

import dataclasses
import sys

from m3agent.cli.common import EXIT_USAGE, controller_for, open_db, print_json
from m3agent.config import Config
from m3agent.files.terminal import safe


def _format_hits(hits: list[dict]) -> str:
    return ", ".join(f"{h['clip']} ({h['start']:.0f}-{h['end']:.0f} s)" for h in hits) or "none"


def cmd_ask(args, config: Config) -> int:
    from m3agent.control import Question
    from m3agent.eval.grounding import answer_unfound, unfound_note

    question = Question(args.question, args.before_clip, args.video)  # a bad question fails before anything loads
    with open_db(args, config, readonly=True) as graph:
        answer = controller_for(graph, config).answer(question)  # one about a video memory lacks fails before any round
    unfound = answer_unfound(answer)
    if args.json:
        print_json({**answer.to_dict(), "unfound": unfound})
        return 0
    print(safe(answer.answer) if answer.answer else "(no answer)")
    if unfound:
        print("  " + safe(unfound_note(unfound)))
    model_rounds = 0
    for step in answer.rounds:
        if step.by == "model":
            model_rounds += 1
        label = f"round {model_rounds}" if step.by == "model" else step.by
        if step.action == "search":
            print(f"  {label}: search {safe(repr(step.content))} -> clips {_format_hits(step.hits)}")
        elif step.replaced:
            print(f"  {label}: answer; {safe(step.replaced_note())}")
        else:
            print(f"  {label}: answer")
    print(f"  {answer.seconds:.1f} s, {model_rounds} model rounds, {answer.tokens} tokens")
    return 0


def cmd_qa(args, config: Config) -> int:
    from tqdm import tqdm

    from m3agent.config import ConfigError
    from m3agent.jobs.qa import QAInterrupted, answers_path, answers_so_far, read_questions, run_qa

    items = read_questions(args.questions)
    if not items:
        print(f"m3agent qa: error: {args.questions} holds no question", file=sys.stderr)
        return EXIT_USAGE
    out = answers_path(args.questions, args.out)
    answers_so_far(out, items)  # a file that is not ours to write fails now, before any model loads
    if args.batch is not None:
        if args.batch < 1:
            raise ConfigError(f"--batch must be >= 1 (got {args.batch})")
        config = dataclasses.replace(config, control=dataclasses.replace(config.control, batch_size=args.batch))
    with open_db(args, config, readonly=True) as graph:
        controller = controller_for(graph, config)
        with tqdm(total=len(items), unit="question", disable=args.quiet) as bar:
            try:
                report = run_qa(controller, items, out, config.control, on_done=bar.update)
            except QAInterrupted as exc:
                bar.close()
                saved = exc.report.skipped + exc.report.answered
                print(f"interrupted: {saved} answers saved in {out}; run the same command to resume", file=sys.stderr)
                return 130
    print(f"{report.summary()}; answers in {out}")
    return 0 if report.failed == 0 else 1


def cmd_demo(args, config: Config) -> int:
    from m3agent.files.cache import cache_root
    from m3agent.jobs.demo import run_demo

    workdir = args.workdir or str(cache_root() / "demo")
    summary = run_demo(workdir, config, questions=args.question or None, out=lambda text: print(safe(text)))
    if args.json:
        print_json(summary)
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("ask", help="answer a question from memory (multi-round search by the control model)")
    p.add_argument("db")
    p.add_argument("question")
    p.add_argument("--before-clip", type=int, default=None, help="see only clips 0..N (inclusive)")
    p.add_argument("--video", default=None, help="video name or id (default: the only one)")
    p.add_argument("--json", action="store_true", help='print {"answer", "rounds", "seconds", ...}')
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("qa", help="answer a JSON-lines file of questions (batched, resumable)")
    p.add_argument("db")
    p.add_argument("questions", help='JSON lines {"question", "id", "before_clip", "video"} or one question a line')
    p.add_argument("--out", default=None, help="answers, JSON lines (default: QUESTIONS.answers.jsonl)")
    p.add_argument("--batch", type=int, default=None, help="questions moved through their rounds together")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_qa)

    p = sub.add_parser("demo", help="build the sample episode, memorize it and answer questions about it")
    p.add_argument("--workdir", default=None, help="where the video and memory DB go (default ~/.cache/m3agent/demo, or under $M3AGENT_CACHE)")
    p.add_argument("--question", action="append", default=[], help="ask this instead (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_demo)
