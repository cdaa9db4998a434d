"""The app: ``app`` opens the Gradio app of the checkout's ``app/`` folder over a data folder."""

from __future__ import annotations

import dataclasses
import os

from m3agent.config import Config
from m3agent.errors import M3AgentError


def cmd_app(args, config: Config) -> int:
    launch = app_module().launch

    settings = {k: v for k, v in (("data_dir", args.data), ("host", args.host), ("port", args.port)) if v is not None}
    config = dataclasses.replace(config, app=dataclasses.replace(config.app, **settings))
    cli_args = ["--config", os.path.abspath(args.config)] if args.config else []
    cli_args += [w for o in args.overrides for w in ("--set", o)]
    launch(config, cli_args)
    return 0


class AppMissingError(M3AgentError):
    """``m3agent app`` without gradio installed, or outside a checkout that has the ``app/`` folder."""


def app_module():
    """``app/main.py`` of the checkout this package runs from: the app is a script folder beside the
    package, never installed as a top-level ``app`` package of its own (that name would collide)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "app" / "main.py"  # m3agent/cli/app.py -> the checkout
    if not path.is_file():
        raise AppMissingError(f"the app lives in the repository's app/ folder ({path} is missing): run m3agent "
                              "from a clone installed with pip install -e '.[app]'")
    if importlib.util.find_spec("gradio") is None:
        raise AppMissingError("the app needs its extra: pip install -e '.[app]'")
    spec = importlib.util.spec_from_file_location("m3agent_app_main", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def add_commands(sub) -> None:
    p = sub.add_parser("app", help="open the Gradio app over a data folder (127.0.0.1 unless told otherwise)")
    p.add_argument("--data", default=None, help="the data folder (app.data_dir): videos, uploads, memories")
    p.add_argument("--host", default=None, help="address to bind (app.host, default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (app.port, default 7860; 0: any free port)")
    p.set_defaults(func=cmd_app)
