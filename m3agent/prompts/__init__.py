"""Prompt templates, kept as text files beside this module."""

from functools import cache
from importlib import resources


@cache  # read once per process: the control loop asks for them every round
def load_prompt(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
