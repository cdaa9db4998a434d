"""Prompt templates, kept as text files beside this module, and the grammars of the replies they ask for."""

from functools import cache
from importlib import resources


@cache  # read once per process: the control loop asks for them every round
def load_prompt(name: str) -> str:
    return resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")


@cache
def load_grammar(name: str) -> str:
    """The GBNF grammar of reply format ``name`` (``<name>.gbnf`` here), which a backend that decodes under
    a grammar (llama.cpp) applies; a name with no file is a :class:`FileNotFoundError`."""
    return resources.files(__package__).joinpath(f"{name}.gbnf").read_text(encoding="utf-8")
