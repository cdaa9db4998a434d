"""The text protocol between the control model and memory: reading its replies, writing search results.

Each round the model replies ``Action: [Search]`` or ``Action: [Answer]`` with a ``Content:``; only the
text after a reasoning model's ``</think>`` counts. A reply that does not follow the format is used as a
search query as it stands (its first line); a backend that decodes under a grammar is held to the format
(:data:`REPLY_FORMAT`), so no reply of its is malformed. These are pure functions on strings and message lists, so
any driver (a batch loop, a chat app, an RL rollout that generates tokens itself) reads and writes the
conversation the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from m3agent.media.clock import clock
from m3agent.models.llm.base import answer_text

_ACTION = re.compile(r"action\s*:\s*\[?\s*(answer|search)\s*\]?\s*(?:content\s*:\s*)?(.*)", re.IGNORECASE | re.DOTALL)
_CONTENT = re.compile(r"content\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)
_LABEL = re.compile(r"^(?:(?:a|answer|content)\s*:\s*)+", re.IGNORECASE)  # echoed labels before the content
_ECHO = re.compile(r"^question\s*:", re.IGNORECASE)  # the question copied back: no answer, no query
#: words of the reply format: a content that is one of them, or the start of one ("Acti."), is the format echoed
_FORMAT_WORDS = ("action", "content", "answer", "search", "question")
_PLAIN_ANSWER = re.compile(r"^\W*(?:the\s+)?(?:final\s+)?answer\b(?:\s+is\b)?\s*[:\-]?\s*(.+)", re.IGNORECASE | re.DOTALL)
#: the model must never write these; stopping there cuts small models' echoes of the prompt short
STOP = ("\nQuestion:", "Search results for ")
EMPTY_RESULT = "(The search result is empty. Please try searching from another perspective.)"
KNOWLEDGE_PREFIX = "Search results for "
DROPPED = KNOWLEDGE_PREFIX + "an earlier query: (dropped to fit the context window)"
MAX_QUERY_CHARS = 300  # a malformed reply searches with its first line, cut to this
#: the reply format the control step asks for: ``m3agent/prompts/control_action.gbnf`` admits exactly the
#: replies :func:`parse_action` reads as well formed (backends that cannot decode under a grammar ignore it)
REPLY_FORMAT = "control_action"


def parse_action(text: str) -> tuple[str, str, bool]:
    """``(action, content, malformed)`` from a model reply."""
    reply = answer_text(text)
    match = _ACTION.search(reply)
    if match:
        action, content = match.group(1), match.group(2).strip()
        while (header := _ACTION.match(content)) is not None:  # the header again as the content: what follows it
            action, content = header.group(1), header.group(2).strip()
        inner = _CONTENT.search(content)
        content = _LABEL.sub("", (inner.group(1) if inner else content).strip()).strip()
        if not content or _ECHO.match(content) or _format_word(content):  # nothing but labels, the question
            return "search", "", False  # copied back or a word of the format: no answer, the question searched again
        return action.lower(), content, False
    plain = _PLAIN_ANSWER.match(reply)
    if plain:  # "The answer is ...": small models answer without the format
        return "answer", plain.group(1).strip().strip('"').strip(), True
    return "search", reply.strip(), True


def _format_word(content: str) -> bool:
    """Whether ``content`` is only a word of the reply format or its first four letters or more (SmolLM2-135M
    answered "Acti." to a question whose answer its notes held). Three letters are a word of their own as often
    ("Con." copied from a sign reading "CON", "Sea.")."""
    word = re.sub(r"\W+", "", content).casefold()
    return len(word) >= 4 and any(full.startswith(word) for full in _FORMAT_WORDS)


def choose_query(content: str, malformed: bool, question: str) -> str:
    """The search a reply asks for; a malformed reply searches with its first line (small models
    tend to echo the notes back, which would make a useless query: the question is used then)."""
    if malformed:
        content = next((line for line in content.splitlines() if line.strip()), "")[:MAX_QUERY_CHARS]
        if content.startswith(KNOWLEDGE_PREFIX) or content.lstrip("- ").startswith("CLIP_"):
            content = ""
    return content.strip() or question


def echoes(content: str, question: str) -> bool:
    """Whether an answer only copies the question back (its words, ignoring case and punctuation)."""
    words = lambda text: re.findall(r"\w+", text.casefold())  # noqa: E731
    return bool(words(content)) and words(content) == words(question)


def format_results(query: str, result, shown: Callable[[str], str] = str) -> str:
    """Search results as the model reads them: one block of note lines per clip, with its time span, each
    line as ``shown`` writes it. Clips come in the search's order, best first: an adapter trained on them in the
    video's order learned to answer from the last line shown, whatever the question (docs/RESULTS.md)."""
    out = [KNOWLEDGE_PREFIX + json.dumps(query, ensure_ascii=False) + ":"]
    for clip in result.clips:
        out.append(f"CLIP_{clip.id} ({clock(clip.start)}-{clock(clip.end)}):")
        out.extend(f"- {shown(line)}" for line in clip.lines)
    if result.empty:
        out.append(EMPTY_RESULT)
    return "\n".join(out)


def drop_oldest_results(messages: list[dict]) -> bool:
    """Replace the oldest search results still shown by :data:`DROPPED`, keeping that message's round
    instruction, so a conversation too long for the context window loses old evidence before new.
    False when there is nothing left to drop."""
    for message in messages:
        content = message["content"]
        if message["role"] == "user" and content.startswith(KNOWLEDGE_PREFIX) and not content.startswith(DROPPED):
            instruction = content.split("\n\n", 1)[1] if "\n\n" in content else ""
            message["content"] = (DROPPED + "\n\n" + instruction).strip()
            return True
    return False
