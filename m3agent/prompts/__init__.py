"""Prompt templates, kept as text files beside this module."""

from importlib import resources


def load_prompt(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
