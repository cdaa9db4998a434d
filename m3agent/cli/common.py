"""What every command group shares: opening the memory DB a command names, printing JSON, one-line warnings."""

from __future__ import annotations

import sys

from m3agent.config import Config
from m3agent.files.terminal import dumps, safe

EXIT_USAGE = 2


def open_db(args, config: Config, *, create: bool = False, readonly: bool = False):
    """The memory DB ``args.db``, opened with the user's memory settings (:func:`m3agent.factory.open_memory`)."""
    from m3agent.factory import open_memory

    return open_memory(args.db, config, create=create, readonly=readonly)


def controller_for(graph, config: Config):
    """The control loop over ``graph`` with ``control.chat`` (:func:`m3agent.factory.build_controller`)."""
    from m3agent.factory import build_controller

    return build_controller(graph, config)


def print_json(data) -> None:
    sys.stdout.write(dumps(data, indent=2) + "\n")


def warn(command: str, text: str) -> None:
    print(f"m3agent {command}: {safe(text, one_line=True)}", file=sys.stderr)
