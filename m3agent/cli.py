"""The ``m3agent`` command line: parse arguments, build objects through :mod:`m3agent.factory`, run a job, print.

Every command takes ``--config FILE`` and repeated ``--set key.path=value`` overrides. Every project error
(:class:`m3agent.errors.M3AgentError`) is caught in one place and printed in one line, without a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Sequence

from m3agent.config import Config, load_config
from m3agent.errors import M3AgentError
from m3agent.terminal import dumps, safe

EXIT_USAGE = 2


def _open(args, config: Config, *, create: bool = False, readonly: bool = False):
    from m3agent.factory import open_memory

    return open_memory(args.db, config, create=create, readonly=readonly)


def _print_json(data) -> None:
    sys.stdout.write(dumps(data, indent=2) + "\n")


def _warn(command: str, text: str) -> None:
    print(f"m3agent {command}: {safe(text, one_line=True)}", file=sys.stderr)


def cmd_inspect(args, config: Config) -> int:
    with _open(args, config, readonly=True) as graph:
        info = graph.inspect()
        if args.check:
            info["integrity"] = graph.integrity_check() or "ok"
    if args.json:
        _print_json(info)
        return 0 if info.get("integrity", "ok") == "ok" else 1
    print(safe(f"{info['path']}  schema {info['schema']}  {info['bytes'] / 1e6:.1f} MB  embedder {info['embedder']}"))
    nodes = info["nodes"]
    print("nodes: " + ", ".join(f"{k} {v}" for k, v in nodes.items()) + f"; edges {info['edges']}")
    for v in info["videos"]:
        print(safe(f"  video {v['id']} {v['name']!r}: {v['clips']} clips (last {v['last_clip']}), "
                   f"{v['characters']} characters, {v['names']} named", one_line=True))
    if args.check:
        print(f"integrity: {info['integrity']}")
    return 0 if info.get("integrity", "ok") == "ok" else 1


QUERY_LINE = 100_000  # the longest line of a --queries file (characters)


def _search_queries(args) -> list[dict]:
    """The queries of one search command: the positional one, or ``--queries FILE`` (a query a line, as
    text or ``{"query", "id"}``); a line that is neither is reported in the results, not fatal."""
    from m3agent.jsonl import LineError, file_lines, loads, too_long
    from m3agent.memory.search import QueryError

    if args.queries is None:
        if args.query is None:
            raise QueryError("give a query, or --queries FILE")
        return [{"id": None, "query": args.query}]
    if args.query is not None:
        raise QueryError("give a query or --queries FILE, not both")
    out = []
    lines = file_lines(args.queries, error=QueryError, unreadable="cannot read --queries {source}: {reason}",
                       max_line=QUERY_LINE)
    for number, line in lines:
        if line is None:
            out.append({"id": number, "query": None, "error": f"line {too_long(QUERY_LINE)}"})
            continue
        item: dict = {"id": number, "query": line}
        if line.lstrip().startswith("{"):
            try:
                value = loads(line)
            except LineError:
                value = None
            if not isinstance(value, dict) or not isinstance(value.get("query"), str):
                item = {"id": number, "query": None, "error": 'not a query: give text or {"query": ..., "id": ...}'}
            else:
                item = {"id": value.get("id", number), "query": value["query"]}
        out.append(item)
    return out


def cmd_search(args, config: Config) -> int:
    from m3agent.memory.model import DECLARATIVE_KINDS, NodeKind
    from m3agent.memory.search import (
        QueryError,
        check_before_clip,
        check_count,
        check_query,
        check_threshold,
    )

    queries = _search_queries(args)
    if args.queries is None:
        check_query(args.query)  # bad input fails before the embedder loads
    check_before_clip(args.before_clip)
    check_count("--top-k", args.top_k)
    check_count("--lines", args.lines)
    check_threshold("--threshold", args.threshold)
    kinds = (NodeKind.PROCEDURAL,) if args.procedural else DECLARATIVE_KINDS
    with _open(args, config, readonly=True) as graph:
        for item in queries:
            if item.get("query") is not None:
                try:
                    query = check_query(item["query"])
                    result = graph.search(query, video=args.video, all_videos=args.all_videos, top_k=args.top_k,
                                          threshold=args.threshold, before_clip=args.before_clip, lines=args.lines,
                                          kinds=kinds)
                except QueryError as exc:
                    if args.queries is None:
                        raise
                    item = {**item, "error": str(exc)}
                else:
                    item = {**item, **result.to_dict()}
            if args.queries is not None:
                sys.stdout.write(dumps(item) + "\n")
            elif args.json:
                _print_json(item if args.lines else result.to_dict())
            else:
                _print_result(result, args.all_videos)
    return 0


def _print_result(result, all_videos: bool) -> None:
    if result.lines:
        for line in result.lines:
            rid = f"{line['id']} " if line["id"] is not None else ""
            print(f"[{safe(rid)}rank {line['rank_score']:.4f} cosine {line['score']:.3f} bm25 {line['lexical']:.2f}] "
                  f"{safe(line['text'], one_line=True)}")
        return
    if result.empty:
        print("no memory matches this query")
    for clip in result.clips:
        where = f"{safe(clip.video, one_line=True)} " if all_videos else ""
        print(f"[{where}clip {clip.id} {clip.start:.0f}-{clip.end:.0f}s score {clip.score:.3f}]")
        for line in clip.lines:
            print(f"  {safe(line, one_line=True)}")


def cmd_remember(args, config: Config) -> int:
    from m3agent import factory
    from m3agent.memory.store import writing
    from m3agent.memory.text_sources import read_records

    records, problems = read_records(args.jsonl)  # a bad file fails before any model loads
    for number, reason in problems:
        _warn("remember", f"{args.jsonl} line {number} skipped: {reason}")
    policy = None
    if args.policy == "chat":  # a chat model decides what to keep, with memory tools (m3agent.memops)
        from m3agent.memops.policy import ChatPolicy, policy_chat

        chat = factory.build_chat(policy_chat(config, procedural=args.procedural))
        policy = ChatPolicy(chat, config.train.memory_build)
    with writing(args.db):
        graph = factory.open_memory(args.db, config, create=True)
    with graph:
        from tqdm import tqdm

        with tqdm(total=len(records), desc=safe(f"remember {args.source}", one_line=True), unit="record", disable=args.quiet,
                  file=sys.stderr) as bar:
            if policy is not None:
                report = policy.build(graph, args.source, records, progress=bar.update)
            else:
                report = graph.remember(args.source, records, procedural=args.procedural, progress=bar.update)
    if getattr(report, "forgotten", 0):  # the chat policy's report has no such count
        _warn("remember", f"{report.forgotten} records were forgotten earlier (m3agent forget) and are not stored again")
    if getattr(report, "changed", None):
        shown = ", ".join(repr(i) for i in report.changed[:10]) + (" ..." if len(report.changed) > 10 else "")
        _warn("remember", f"{len(report.changed)} records were stored before with other text; the stored lines "
                          f"are kept (ids {shown})")
    _print_json({**report.to_dict(), "skipped_lines": len(problems)})
    return 1 if problems and not records else 0


def cmd_export(args, config: Config) -> int:
    with _open(args, config, readonly=True) as graph:
        _print_json(graph.export(args.video))
    return 0


def cmd_import_m3(args, config: Config) -> int:
    from m3agent.memory.m3_import import load_m3_pickle

    source = load_m3_pickle(args.pickle)
    name = args.video or os.path.splitext(os.path.basename(args.pickle))[0]
    with _open(args, config, create=True) as graph:
        stats = graph.import_m3(source, name, clip_seconds=args.clip_seconds)
    if stats.get("empty_lines"):
        _warn("import-m3", f"skipped {stats['empty_lines']} empty memory lines of {args.pickle}")
    _print_json(stats)
    return 0


def cmd_forget(args, config: Config) -> int:
    with _open(args, config) as graph:
        video = graph.resolve_video(args.video)
        report = graph.forget(video.id, args.character, keep_mentions=args.keep_mentions, wait=args.wait)
    _print_json(report)
    return 0


def cmd_memorize(args, config: Config) -> int:
    from m3agent import factory
    from m3agent.media import probe
    from m3agent.memorize import memorize_video
    from m3agent.memorize.pipeline import MemorizationInterrupted
    from m3agent.memorize.progress import EventLog
    from m3agent.memory.store import writing

    events = EventLog(args.events) if args.events else None
    if args.build_sample and not os.path.exists(args.video):
        from m3agent.samples.episode import build_sample_episode

        if events:
            events({"event": "prepare", "what": "building the sample episode"})
        build_sample_episode(args.video)
    probe(args.video)  # a bad file fails here, before any model loads
    with writing(args.memory):  # and so does a DB another process is writing
        perceiver, memorizer, embedder = factory.memorization_stack(config)
        graph = factory.open_memory(args.memory, config, embedder=embedder, create=True)
    with graph, contextlib.closing(events) if events else contextlib.nullcontext():
        log_path = args.log or f"{args.memory}.memorize.jsonl"
        try:
            report = memorize_video(args.video, graph, perceiver, memorizer, config.memorize, name=args.name,
                                    log_path=log_path, progress=not args.quiet, on_event=events)
        except MemorizationInterrupted as stop:
            done = len(graph.clips(stop.report.video_id))
            print(f"interrupted: {done} clips are saved in {args.memory}; run the same command to resume",
                  file=sys.stderr)
            return 130
    _print_json(report.to_dict())
    if report.truncated:  # what could be read is memorized (exit 0), but the rest of the file is missing
        _warn("memorize", f"warning: {args.video} {report.note}")
    return 0


def cmd_memorize_batch(args, config: Config) -> int:
    from m3agent.jobs.batch import plan_jobs, read_video_list, run_local, run_ray, summary_table

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
    summary = [dataclasses.asdict(r) for r in results]
    with open(os.path.join(args.memory_dir, "batch_status.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    if args.json:
        _print_json(summary)
    else:
        print(summary_table(results))
    return 0 if all(r.status != "failed" for r in results) else 1


def _controller(graph, config: Config):
    from m3agent.factory import build_controller

    return build_controller(graph, config)


def _format_hits(hits: list[dict]) -> str:
    return ", ".join(f"{h['clip']} ({h['start']:.0f}-{h['end']:.0f} s)" for h in hits) or "none"


def cmd_ask(args, config: Config) -> int:
    from m3agent.control import ControlStep, Question

    question = Question(args.question, args.before_clip, args.video)  # a bad question fails before anything loads
    with _open(args, config, readonly=True) as graph:
        ControlStep(graph).video_of(question)  # so does one about a video memory lacks or holds no clip of
        answer = _controller(graph, config).answer(question.text, video=question.video,
                                                   before_clip=question.before_clip)
    if args.json:
        _print_json(answer.to_dict())
        return 0
    print(safe(answer.answer) if answer.answer else "(no answer)")
    model_rounds = 0
    for step in answer.rounds:
        if step.by == "model":
            model_rounds += 1
        label = f"round {model_rounds}" if step.by == "model" else step.by
        if step.action == "search":
            print(f"  {label}: search {safe(repr(step.content))} -> clips {_format_hits(step.hits)}")
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
    with _open(args, config, readonly=True) as graph:
        controller = _controller(graph, config)
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


def cmd_bench_m3(args, config: Config) -> int:
    from pathlib import Path

    from tqdm import tqdm

    from m3agent import factory
    from m3agent.config import ConfigError
    from m3agent.eval.annotations import read_annotations
    from m3agent.jobs.bench import BenchInterrupted, BenchSetup, results_path, run_bench
    from m3agent.outfolder import fingerprint

    items = read_annotations(args.annotations, fmt=args.format, evidence=args.evidence,
                             clip_seconds=config.memorize.perception.clip_seconds)
    questions = fingerprint(items)  # the run folder belongs to the whole file: --duration and --limit take a part
    if args.duration:
        items = [item for item in items if item.duration == args.duration]
    if args.limit is not None:
        if args.limit < 1:
            raise ConfigError(f"--limit must be >= 1 (got {args.limit})")
        items = items[:args.limit]
    if not items:
        print(f"m3agent bench m3: error: {args.annotations} holds no question", file=sys.stderr)
        return EXIT_USAGE
    for flag, folder in (("--memories", args.memories), ("--videos", args.videos)):
        if folder is not None and not Path(folder).is_dir():
            if flag == "--memories" and args.videos is not None and not Path(folder).exists():
                continue  # created when the first video is memorized into it
            raise ConfigError(f"{flag} {folder} is not a folder")
    out = Path(args.out)
    if results_path(out).resolve() == Path(args.annotations).resolve():
        raise ConfigError(f"--out {out} would write over the annotations {args.annotations}")
    bar = tqdm(total=len(items), unit="question", disable=args.quiet)
    setup = BenchSetup(memories=Path(args.memories), out=out, config=config,
                       chat=lambda: factory.build_chat(config.control.chat),
                       judge=lambda: factory.build_judge(config.bench.judge),
                       judge_label=factory.judge_label(config.bench.judge),
                       videos=Path(args.videos) if args.videos else None, questions=questions,
                       progress=bar.update, notice=lambda text: bar.write(text) if not args.quiet else None)
    context = _bench_context(args, config)
    if args.feedback:
        from m3agent.jobs.bench_feedback import run_feedback_bench

        bar.total = 2 * len(items)
        try:
            result = run_feedback_bench(items, setup, benchmark=args.title or Path(args.annotations).name,
                                        context=context, correction_rate=args.correction_rate)
        except BenchInterrupted:
            bar.close()
            print("interrupted: run the same command to resume", file=sys.stderr)
            return 130
        bar.close()
        if args.json:
            _print_json(result)
        for part in ("later questions", "second half"):
            a, b = result[part]["without"], result[part]["with"]
            print(f"{part}: without feedback memory {a['correct']}/{a['questions']}, with it {b['correct']}/{b['questions']}")
        print(f"report: {out / 'feedback.md'}")
        return 0
    try:
        summary = run_bench(items, setup, benchmark=args.title or Path(args.annotations).name, context=context)
    except BenchInterrupted as stop:
        bar.close()
        print(f"interrupted: {stop.saved} results saved in {results_path(out)}; run the same command to resume",
              file=sys.stderr)
        return 130
    bar.close()
    if args.json:
        _print_json(summary.to_dict())
    overall = summary.overall
    print(f"accuracy {100 * overall.accuracy:.1f}% ({overall.correct}/{overall.total}); {overall.answered} answered, "
          f"{overall.total - overall.answered} not answered; report: {out / 'report.md'}")
    return 0


def _bench_context(args, config: Config) -> dict[str, str]:
    """What produced the numbers, written at the top of the report."""
    import datetime
    import platform
    import shlex

    from m3agent.factory import chat_backend

    def shown(path) -> str:
        relative = os.path.relpath(path)
        return relative if not relative.startswith("..") else str(path)

    words = [w for o in args.overrides for w in ("--set", o)] + ["bench", "m3", "--annotations", shown(args.annotations),
                                                              "--memories", shown(args.memories), "--out", shown(args.out)]
    for flag, value in (("--videos", args.videos), ("--limit", args.limit), ("--duration", args.duration),
                        ("--evidence", args.evidence)):
        if value is not None:
            words += [flag, shown(value) if flag in ("--videos", "--evidence") else str(value)]
    if args.format != "auto":
        words += ["--format", args.format]
    if args.feedback:
        words += ["--feedback"] + (["--correction-rate", f"{args.correction_rate:g}"]
                                   if args.correction_rate is not None else [])
    chat = config.control.chat
    model = chat.model or ("bundled SmolLM2-135M-Instruct" if chat.backend in ("", "auto") else "")
    search = config.memory.search
    threshold = search.threshold if search.threshold is not None else "the embedder's"
    return {"command": "m3agent " + shlex.join(words),
            "control model": chat_backend(chat.backend) + (f": {model}" if model else ""),
            "control": f"{config.control.max_rounds} rounds, question searched first: {config.control.seed_search}, "
                       f"batches of {config.control.batch_size}; search top {search.top_k} clips, threshold {threshold}, "
                       f"{search.retrieval} ranking, {config.control.lessons} lessons shown",
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "date": datetime.date.today().isoformat()}


def cmd_bench_memorybench(args, config: Config) -> int:
    import dataclasses as dc
    from pathlib import Path

    from tqdm import tqdm

    from m3agent import factory
    from m3agent.config import ConfigError
    from m3agent.eval.memorybench.records import load_records
    from m3agent.jobs.memorybench import MemoryBenchSetup, run_memorybench
    from m3agent.outfolder import fingerprint

    data = args.data or os.environ.get("MEMORY_BENCH_PATH")
    if not data:
        raise ConfigError("give --data PATH (or set MEMORY_BENCH_PATH): MemoryBench records, JSON lines or the "
                          "published dataset folder")
    records = load_records(data)
    whole = fingerprint(records)  # the run folder belongs to all the records: --datasets takes a part
    if args.datasets:
        wanted = {d.strip() for d in args.datasets.split(",")}
        records = [r for r in records if r.dataset in wanted or r.problem]
    if args.systems:
        config = dc.replace(config, bench=dc.replace(config.bench, memorybench=dc.replace(
            config.bench.memorybench, systems=args.systems)))
    root = Path(data)
    corpus = (root if root.is_dir() else root.parent) / "corpus"
    mb = config.bench.memorybench
    bar = tqdm(unit="answer", disable=args.quiet)
    setup = MemoryBenchSetup(out=Path(args.out), config=config, embedder=lambda: factory.build_embedder(config.embedder),
                             chat=lambda: factory.build_chat(mb.answer), user=lambda: factory.build_chat(mb.user),
                             judge=lambda: factory.build_chat(mb.judge), corpus_dir=corpus if corpus.is_dir() else None,
                             data=whole, progress=bar.update, notice=lambda text: bar.write(text) if not args.quiet else None)
    context = {"command": "m3agent " + " ".join(sys.argv[1:]) if sys.argv else "m3agent bench memorybench",
               "systems": config.bench.memorybench.systems,
               "answer model": f"{mb.answer.backend} {mb.answer.model}".strip(),
               "user model": f"{mb.user.backend} {mb.user.model}".strip(),
               "judge model": f"{mb.judge.backend} {mb.judge.model}".strip()}
    summary = run_memorybench(records, args.driver, setup, context)
    bar.close()
    if args.json:
        _print_json(summary)
    else:
        print(Path(args.out) / "report.md")
    return 0


def cmd_train_data(args, config: Config) -> int:
    from pathlib import Path

    from m3agent.train import dataset

    def usage(problem: str) -> int:
        print(f"m3agent train-data: error: {problem}", file=sys.stderr)
        return EXIT_USAGE

    if args.val_fraction is not None and not 0 <= args.val_fraction < 1:
        return usage(f"--val-fraction must be in [0, 1) (got {args.val_fraction})")
    split = {"val_fraction": args.val_fraction, "seed": args.seed}
    if args.task == "control":
        if not (args.annotations and args.memories) or args.tasks or args.memorybench:
            return usage("--task control needs --annotations and --memories (--tasks and --memorybench are for "
                         "--task memory-build)")
        summary = dataset.build_dataset(args.annotations, args.memories, args.out, config, **split)
        unit, group = "questions", "videos"
    else:
        if bool(args.tasks) == bool(args.memorybench):
            return usage("--task memory-build needs --tasks FILE or --memorybench DATA (one of them)")
        source = Path(args.tasks or args.memorybench)
        tasks = (dataset.read_tasks(source) if args.tasks else
                 dataset.memorybench_tasks(source, notice=lambda text: print(text, file=sys.stderr)))
        kind = "memory-build" if args.tasks else "memorybench"
        summary = dataset.build_task_dataset(tasks, args.out, config, data_source=f"{kind}/{source.stem}", **split)
        unit, group = "tasks", "questions"
    if args.json:
        _print_json({k: v for k, v in summary.items() if k != "problems"})
    else:
        skipped = ", ".join(f"{n} {reason}" for reason, n in summary["skipped"].items()) or "none"
        print(f"{summary['train']} train {unit} ({summary[f'train_{group}']} {group}), {summary['val']} validation "
              f"({summary[f'val_{group}']} {group}); skipped: {skipped}; in {args.out} (summary.json says why)")
    return 0 if summary["train"] + summary["val"] else 1


def cmd_demo(args, config: Config) -> int:
    from m3agent.jobs.demo import run_demo

    workdir = args.workdir or os.path.join(os.path.expanduser("~"), ".cache", "m3agent", "demo")
    summary = run_demo(workdir, config, questions=args.question or None, out=lambda text: print(safe(text)))
    if args.json:
        _print_json(summary)
    return 0


def cmd_app(args, config: Config) -> int:
    launch = _app_module().launch

    settings = {k: v for k, v in (("data_dir", args.data), ("host", args.host), ("port", args.port)) if v is not None}
    config = dataclasses.replace(config, app=dataclasses.replace(config.app, **settings))
    cli_args = ["--config", os.path.abspath(args.config)] if args.config else []
    cli_args += [w for o in args.overrides for w in ("--set", o)]
    launch(config, cli_args)
    return 0


class AppMissingError(M3AgentError):
    """``m3agent app`` without gradio installed, or outside a checkout that has the ``app/`` folder."""


def _app_module():
    """``app/main.py`` of the checkout this package runs from: the app is a script folder beside the
    package, never installed as a top-level ``app`` package of its own (that name would collide)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "app" / "main.py"
    if not path.is_file():
        raise AppMissingError(f"the app lives in the repository's app/ folder ({path} is missing): run m3agent "
                              "from a clone installed with pip install -e '.[app]'")
    if importlib.util.find_spec("gradio") is None:
        raise AppMissingError("the app needs its extra: pip install -e '.[app]'")
    spec = importlib.util.spec_from_file_location("m3agent_app_main", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cmd_characters(args, config: Config) -> int:
    if args.action:  # a person's correction: written to the DB, then the cards as they now stand
        with _open(args, config) as graph:
            if args.action == "corrections":
                _print_json(graph.corrections(args.video))
                return 0
            if args.action == "undo":
                if len(args.targets) != 1 or not args.targets[0].isdigit() or len(args.targets[0]) > 18:
                    raise M3AgentError("undo needs the number of a correction (m3agent characters DB corrections)")
                graph.undo_correction(args.video, int(args.targets[0]))
            elif args.action == "split":
                if len(args.targets) != 1 or not args.clips:
                    raise M3AgentError("split needs one node or character and its clips: split voice_9 --clips 3,5-7")
                fix = graph.correct(args.video, "split", args.targets[0], args.clips)
                _warn("characters", f"correction {fix['id']} stored: clips {args.clips} of {args.targets[0]} are "
                      f"node {fix['b']} now")
            else:
                if len(args.targets) != 2:
                    raise M3AgentError(f"{args.action} needs two arguments: "
                                       + ("A NAME" if args.action == "rename" else "A B"))
                fix = graph.correct(args.video, args.action, *args.targets)
                _warn("characters", f"correction {fix['id']} stored: {args.action} {' '.join(args.targets)}")
            _print_json([card.to_dict() for card in graph.character_cards(args.video)])
        return 0
    with _open(args, config, readonly=True) as graph:
        if args.check:  # where identities look wrong; exit 1 when anything does (scripts gate on it)
            problems = graph.identity_problems(args.video)
            _print_json(problems)
            return 1 if problems else 0
        cards = [card.to_dict() for card in graph.character_cards(args.video)]
        if args.explain:  # why nodes became one (each fold into a member, with its evidence) or two (corrections)
            folds, fixes = graph.folds(args.video), graph.corrections(args.video)
            for card in cards:
                members = {int(m.rsplit("_", 1)[1]) for m in card["members"]}
                card["folds"] = [f for f in folds if f["into"] in members]
                card["corrections"] = [f for f in fixes if f["a"] in members or f["b"] in members]
    _print_json(cards)
    return 0


def cmd_timeline(args, config: Config) -> int:
    with _open(args, config, readonly=True) as graph:
        character = None if args.character is None else graph.resolve_character(args.video, args.character)
        _print_json([clip.to_dict() for clip in graph.timeline(args.video, character)])
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="m3agent", description="Long-term memory of long videos.")
    parser.add_argument("--config", help="TOML config file")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. memory.search.top_k=3 (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("inspect", help="summary of a memory DB")
    p.add_argument("db")
    p.add_argument("--json", action="store_true")
    p.add_argument("--check", action="store_true", help="also run SQLite's full integrity check")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("search", help="memory search: clips (M3-Agent), or single lines with --lines")
    p.add_argument("db")
    p.add_argument("query", nargs="?", default=None)
    p.add_argument("--queries", default=None, metavar="FILE",
                   help='many queries in one process: a query a line, text or {"query", "id"}; prints a JSON line each')
    p.add_argument("--lines", type=int, default=None, metavar="K", help="the K best single lines, with record ids")
    p.add_argument("--procedural", action="store_true", help="search procedural memory (feedback, lessons) only")
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--threshold", type=float, default=None)
    p.add_argument("--before-clip", type=int, default=None, help="see only clips 0..N (inclusive)")
    p.add_argument("--video", default=None, help="video name or id (default: the only one)")
    p.add_argument("--all-videos", action="store_true", help="search every video in the DB")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("remember", help="store text records (a conversation, a document) as a text source")
    p.add_argument("db")
    p.add_argument("--source", required=True, help="the text source's name (like a video's)")
    p.add_argument("--jsonl", required=True, help='records, JSON lines {"id", "text", "time"?, "speaker"?, "session"?}')
    p.add_argument("--procedural", action="store_true", help="store them as procedural memory (what worked, corrections)")
    p.add_argument("--policy", choices=("direct", "chat"), default="direct",
                   help="direct: each record becomes a line; chat: a chat model (train.memory_build.chat, else "
                        "control.chat) reads them in chunks and keeps what matters with memory tools")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_remember)

    p = sub.add_parser("export", help="one video's memory graph as JSON")
    p.add_argument("db")
    p.add_argument("--video", default=None)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import-m3", help="import an M3-Agent VideoGraph pickle")
    p.add_argument("pickle")
    p.add_argument("db")
    p.add_argument("--video", default=None, help="name for the imported video (default: file name)")
    p.add_argument("--clip-seconds", type=float, default=30.0)
    p.set_defaults(func=cmd_import_m3)

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
    p.add_argument("--workdir", default=None, help="where the video and memory DB go (default ~/.cache/m3agent/demo)")
    p.add_argument("--question", action="append", default=[], help="ask this instead (repeatable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_demo)

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

    p = sub.add_parser("forget", help="remove a person (or a text source's speaker): their faces, voice, lines, and "
                                      "what others said of them")
    p.add_argument("db")
    p.add_argument("character", help="character_k, <character_k>, or a name the memory knows them by")
    p.add_argument("--video", default=None)
    p.add_argument("--keep-mentions", action="store_true",
                   help="keep lines where others speak of them by name (only their own lines and tags go)")
    p.add_argument("--wait", type=float, default=30.0, metavar="SECONDS",
                   help="how long to wait for other processes reading the DB to finish (default 30)")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("characters", help="one card per character: members, name, clips, a voice sample's time; "
                       "or a correction: merge A B, not-same A B, rename A NAME, split A --clips 3,5-7, "
                       "corrections, undo N")
    p.add_argument("db")
    p.add_argument("action", nargs="?", choices=["merge", "not-same", "rename", "split", "corrections", "undo"],
                   help="correct who is who (stored in the DB; kept across resumes and later memorization); A and B "
                        "are characters (character_3 or a name) or nodes (face_3, voice_9)")
    p.add_argument("targets", nargs="*", metavar="A B|NAME|N")
    p.add_argument("--clips", default=None, metavar="3,5-7",
                   help="split: the clips of A that are another person (they get a node of their own, kept apart)")
    p.add_argument("--video", default=None, help="video name or id (default: the only one)")
    p.add_argument("--explain", action="store_true",
                   help="also each fold into the character's nodes (two nodes found to be one person) and its "
                        "evidence: similarity, the faces, clips and names checked; and the corrections touching it")
    p.add_argument("--check", action="store_true",
                   help="list characters whose identity looks wrong (two names, a voice seen as two faces, a face "
                        "node holding two groups of faces) "
                        "instead; exit 1 when there is any")
    p.set_defaults(func=cmd_characters)

    p = sub.add_parser("timeline", help="the clips in order with their lines (superseded ones marked)")
    p.add_argument("db")
    p.add_argument("--video", default=None, help="video name or id (default: the only one)")
    p.add_argument("--character", default=None, help="only this character (number, character_N or a name)")
    p.set_defaults(func=cmd_timeline)

    p = sub.add_parser("app", help="open the Gradio app over a data folder (127.0.0.1 unless told otherwise)")
    p.add_argument("--data", default=None, help="the data folder (app.data_dir): videos, uploads, memories")
    p.add_argument("--host", default=None, help="address to bind (app.host, default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (app.port, default 7860; 0: any free port)")
    p.set_defaults(func=cmd_app)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        config = load_config(args.config, os.environ, args.overrides)
        return int(args.func(args, config) or 0)
    except M3AgentError as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"m3agent {args.command}: error: {safe(message, one_line=True)}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"m3agent {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
