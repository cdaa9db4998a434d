"""How ``m3agent app`` finds the app: the checkout's ``app/`` folder, loaded by path (it is never
installed as a top-level package), with a one-line error when gradio or the folder is missing."""

import importlib.util
from pathlib import Path

import m3agent
from m3agent.cli import main
from m3agent.cli.app import app_module


def test_the_app_is_loaded_from_the_checkout():
    module = app_module()
    assert callable(module.launch) and callable(module.build_app)
    assert Path(module.__file__) == Path(m3agent.__file__).resolve().parent.parent / "app" / "main.py"


def test_without_gradio_the_command_says_what_to_install(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gradio" else real(name, *a))
    assert main(["app", "--port", "0"]) == 2
    assert "pip install -e '.[app]'" in capsys.readouterr().err
