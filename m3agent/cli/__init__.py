"""The ``m3agent`` command line: parse arguments, run a job (:mod:`m3agent.jobs`) or ask the memory graph, print.

Each command group is a module holding its commands' parsers (``add_commands``) and ``cmd_*`` functions, which
parse, call and print, while the work is the jobs': ``memory`` (inspect, search, remember, export, import-m3),
``memorize`` (memorize, memorize-batch), ``answer`` (ask, qa, demo), ``bench`` (bench m3, bench memorybench),
``train`` (train-data), ``people`` (forget, characters, timeline) and ``app``; ``common`` is what they share.

Every command takes ``--config FILE`` and repeated ``--set key.path=value`` overrides. Every project error
(:class:`m3agent.errors.M3AgentError`) is caught in one place and printed in one line, without a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from m3agent.cli import answer, app, bench, common, memorize, memory, people, train
from m3agent.config import load_config
from m3agent.errors import M3AgentError
from m3agent.files.terminal import safe

EXIT_USAGE = common.EXIT_USAGE

#: the command groups, in the order ``m3agent --help`` lists their commands
GROUPS = (memory, memorize, answer, bench, train, people, app)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="m3agent", description="Long-term memory of long videos.")
    parser.add_argument("--config", help="TOML config file")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. memory.search.top_k=3 (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_commands(sub)
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


__all__ = ["EXIT_USAGE", "build_parser", "main"]
