"""Memory DB commands: ``inspect``, ``search``, ``remember`` (text records), ``export``, ``import-m3``."""

from __future__ import annotations

import os
import sys

from m3agent.cli.common import open_db, print_json, warn
from m3agent.config import DEFAULT_CLIP_SECONDS, Config
from m3agent.files.terminal import dumps, safe


def cmd_inspect(args, config: Config) -> int:
    with open_db(args, config, readonly=True) as graph:
        info = graph.inspect()
        if args.check:
            info["integrity"] = graph.integrity_check() or "ok"
    if args.json:
        print_json(info)
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
    from m3agent.files.jsonl import LineError, file_lines, loads, too_long
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
    with open_db(args, config, readonly=True) as graph:
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
                print_json(item if args.lines else result.to_dict())
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
        warn("remember", f"{args.jsonl} line {number} skipped: {reason}")
    policy = None
    if args.policy == "chat":  # a chat model decides what to keep, with memory tools (m3agent.memory_tools)
        from m3agent.memory_tools.policy import ChatPolicy, policy_chat

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
        warn("remember", f"{report.forgotten} records were forgotten earlier (m3agent forget) and are not stored again")
    if getattr(report, "changed", None):
        shown = ", ".join(repr(i) for i in report.changed[:10]) + (" ..." if len(report.changed) > 10 else "")
        warn("remember", f"{len(report.changed)} records were stored before with other text; the stored lines "
                          f"are kept (ids {shown})")
    print_json({**report.to_dict(), "skipped_lines": len(problems)})
    return 1 if problems and not records else 0


def cmd_export(args, config: Config) -> int:
    with open_db(args, config, readonly=True) as graph:
        print_json(graph.export(args.video))
    return 0


def cmd_import_m3(args, config: Config) -> int:
    from m3agent.memory.m3_import import load_m3_pickle

    source = load_m3_pickle(args.pickle)
    name = args.video or os.path.splitext(os.path.basename(args.pickle))[0]
    with open_db(args, config, create=True) as graph:
        stats = graph.import_m3(source, name, clip_seconds=args.clip_seconds)
    if stats.get("empty_lines"):
        warn("import-m3", f"skipped {stats['empty_lines']} empty memory lines of {args.pickle}")
    print_json(stats)
    return 0


def add_commands(sub) -> None:
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
    p.add_argument("--clip-seconds", type=float, default=DEFAULT_CLIP_SECONDS,
                   help="the clip length the graph was built with (M3-Agent: 30 s)")
    p.set_defaults(func=cmd_import_m3)
