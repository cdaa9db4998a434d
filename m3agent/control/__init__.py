"""The control process: a chat model searches the memory graph over several rounds, then answers.

``protocol`` is one question's step (start, instruct, apply a reply, finish) with no model inside;
``loop`` drives it with a chat model for many questions at once; ``text`` is what the model reads and
writes; ``records`` the question/round/answer records the CLI and QA files print.
"""

from m3agent.control.loop import Controller
from m3agent.control.protocol import ControlStep, EmptyMemoryError, Memory, QuestionState
from m3agent.control.records import Answer, Question, Round
from m3agent.control.text import (
    DROPPED,
    EMPTY_RESULT,
    KNOWLEDGE_PREFIX,
    STOP,
    choose_query,
    drop_oldest_results,
    format_results,
    parse_action,
)

__all__ = [
    "DROPPED",
    "EMPTY_RESULT",
    "KNOWLEDGE_PREFIX",
    "STOP",
    "Answer",
    "ControlStep",
    "Controller",
    "EmptyMemoryError",
    "Memory",
    "Question",
    "QuestionState",
    "Round",
    "choose_query",
    "drop_oldest_results",
    "format_results",
    "parse_action",
]
