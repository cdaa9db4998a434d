"""The one root of every error m3agent raises on purpose.

Each subclass carries a message that names the file (or setting) and the cause, so the CLI can print it
in one line and exit without a traceback. ``exit_code`` is what the CLI exits with: 2 for input the user
can fix (a missing file, a bad setting), 1 for an operation that failed after it started (a model
server that kept failing).
"""

from __future__ import annotations


class M3AgentError(Exception):
    """Base of all project errors; the CLI catches it once."""

    exit_code = 2
