"""One question's way through the control process, one step at a time, with no chat model inside.

The caller owns generation, so the batch loop (:class:`m3agent.control.loop.Controller`), a chat app
and an RL rollout that samples tokens itself all drive this same step::

    step = ControlStep(memory, config)
    state = step.start(question)                   # system message; the seed search when configured
    for number in range(1, step.rounds + 1):
        step.instruct(state, number)               # user message: pending results + round instruction
        reply = generate(state.messages, **step.sampling)
        step.apply(state, reply, last=number == step.rounds)   # answer -> state.final, else search
        if state.done:
            break
    answer = step.finish(state)                    # character ids replaced by names

By default the question itself is searched before the first round (``seed_search``), so even a small
model starts from evidence; this costs one memory search (milliseconds) and no model round. Search results
show a person by name wherever memory knows the name as of the question (``<character_3>`` only for people
still unnamed then): a model then reads "Peter says ..." and need not spend a round on "What is the name of
<character_3>", nor pick the right id out of several, to answer "who said ...".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from m3agent.config import ControlConfig
from m3agent.control.records import Answer, Question, Round
from m3agent.control.text import (
    REPLY_FORMAT,
    STOP,
    choose_query,
    echoes,
    format_results,
    parse_action,
)
from m3agent.memory.characters import name_statement
from m3agent.memory.errors import MemoryStoreError
from m3agent.memory.search import SeenClips
from m3agent.memory.tags import rewrite_tags
from m3agent.models.llm.base import ChatResponse
from m3agent.prompts import load_prompt

if TYPE_CHECKING:
    from m3agent.memory.characters import CharacterMap
    from m3agent.memory.model import Clip, Video
    from m3agent.memory.search import SearchResult


class EmptyMemoryError(MemoryStoreError):
    """The question's video has no clip memorized yet: with nothing to search, a model could only invent."""


class Memory(Protocol):
    """What the control step needs from memory (a :class:`m3agent.memory.MemoryGraph` has it all)."""

    def search(self, query: str, **kwargs) -> SearchResult: ...

    def resolve_video(self, video: int | str | None) -> Video: ...

    def clips(self, video_id: int) -> list[Clip]: ...

    def names(self, video_id: int, before_clip: int | None = None) -> dict[int, str]: ...

    def characters(self, video_id: int, before_clip: int | None = None) -> CharacterMap: ...

    def lessons(self, video_id: int, query: str, k: int, before_clip: int | None = None, *,
                gated: bool = False) -> list[str]: ...


@dataclass
class QuestionState:
    """Everything one question carries between steps. Drivers send ``messages`` to the model and read
    the rest; the step (and :func:`drop_oldest_results`, :meth:`fail`) change it."""

    question: Question
    video_id: int  # -1 when memory does not hold the question's video (``error`` says why)
    messages: list[dict]
    seen: SeenClips = field(default_factory=SeenClips)
    rounds: list[Round] = field(default_factory=list)
    pending: str = ""  # search results waiting to go out with the next instruction
    notes: dict[int, list[str]] = field(default_factory=dict)
    final: str | None = None
    error: str | None = None
    start: float = field(default_factory=time.perf_counter)
    end: float | None = None  # when its answer (or error) came: questions of one batch finish apart
    shown: Callable[[str], str] = str  # a memory line as the model reads it (known names for character ids)
    lessons: list[str] = field(default_factory=list)  # the feedback lines shown with the question

    @property
    def done(self) -> bool:
        return self.final is not None or self.error is not None

    def fail(self, error: str) -> None:
        """End this question with ``error`` (say, its model call failed for good); others go on."""
        self.error, self.end = error, time.perf_counter()


#: ``(question, lessons shown, notes shown, final answer) -> answer to give instead, or None``: a rule over the
#: model's answer (:func:`m3agent.eval.corrections.held_answer`, :func:`m3agent.eval.grounding.quoted_answer`);
#: the notes are the lines of every clip the searches returned, as the model read them
AnswerRule = Callable[[str, Sequence[str], Sequence[str], str], "str | None"]

#: ``(question, notes shown) -> names``: whom the question only describes, as the seed search's notes name them
#: (:func:`m3agent.eval.grounding.bridge_names`); the first is searched with the question before round 1
FollowUp = Callable[[str, Sequence[str]], Sequence[str]]


class ControlStep:
    """``rules`` (name -> :data:`AnswerRule`, tried in order; the factory builds them from config) may give an answer
    in the model's place; none is passed in training, where the model's own answer is what is rewarded. ``follow``
    (:data:`FollowUp`, from :func:`m3agent.eval.grounding.follow_up` of the config) adds a second seed search."""

    def __init__(self, memory: Memory, config: ControlConfig | None = None,
                 rules: Mapping[str, AnswerRule] | None = None, follow: FollowUp | None = None):
        self.memory, self.config, self.rules = memory, config or ControlConfig(), dict(rules or {})
        self.follow = follow

    @property
    def rounds(self) -> int:
        """Model rounds per question; the last one must answer."""
        return max(1, self.config.max_rounds)

    @property
    def sampling(self) -> dict:
        """Generation settings for every round, in :meth:`ChatModel.chat` keywords; ``format`` asks backends
        that decode under a grammar to admit only well-formed replies (a driver that samples tokens itself
        may apply :func:`m3agent.prompts.load_grammar` of it, or drop it)."""
        return {"max_tokens": self.config.max_tokens, "temperature": self.config.temperature, "stop": STOP,
                "format": REPLY_FORMAT}

    def start(self, question: Question, *, strict: bool = False, lessons: Sequence[str] | None = None) -> QuestionState:
        """A new conversation: the system message, and the seed search's results pending for round 1. Here the
        question's video is resolved, once for the whole conversation: a question about a video memory does not
        hold (or holds no clip of) comes back already failed, or with ``strict`` raises its error. ``lessons``
        replaces the ones memory would give (a training task brings its own)."""
        system = load_prompt("control_system").format(question=question.text)
        try:
            video_id = self.video_of(question)
        except MemoryStoreError as exc:
            if strict:
                raise
            return QuestionState(question, -1, [], error=str(exc))
        if lessons is None:
            lessons = self.memory.lessons(video_id, question.text, self.config.lessons, question.before_clip,
                                          gated=self.config.lesson_gate)
        if lessons:
            system += "\n\n" + load_prompt("control_lessons").format(lessons="\n".join(f"- {x}" for x in lessons))
        state = QuestionState(question, video_id, [{"role": "system", "content": system}],
                              shown=self.shown(video_id, question.before_clip), lessons=list(lessons or ()))
        if self.config.seed_search:
            step = Round("search", question.text, by="seed")
            state.rounds.append(step)
            state.pending = self.search(state, step, question.text)
            if self.follow is not None:
                self._follow_names(state)
        return state

    def _follow_names(self, state: QuestionState) -> None:
        """One more seed search, for the first person the seed's notes name that the question only describes
        (``follow``): the person's name with the question, which finds their other lines (clips already shown are
        never shown again)."""
        names = self.follow(state.question.text, self._notes_shown(state))
        if names:
            query = f"{names[0]} {state.question.text}"
            step = Round("search", query, by="seed")
            state.rounds.append(step)
            state.pending += "\n" + self.search(state, step, query)

    def video_of(self, question: Question) -> int:
        """The id of the video ``question`` asks about; :class:`MemoryStoreError` when memory lacks it,
        :class:`EmptyMemoryError` when it holds no clip of it yet."""
        video = self.memory.resolve_video(question.video)
        if not self.memory.clips(video.id):
            raise EmptyMemoryError(f"memory holds no clip of video {video.name!r} yet: nothing to answer from "
                                   "(memorize the video first)")
        return video.id

    def instruct(self, state: QuestionState, number: int, total: int | None = None) -> None:
        """Append round ``number``'s user message: the pending search results, then the instruction
        (on the last round, the one that forces an answer)."""
        total = total or self.rounds
        template = load_prompt("control_last_round" if number == total else "control_round")
        instruction = template.format(round=number, rounds=total, question=state.question.text)
        state.messages.append({"role": "user", "content": (state.pending + "\n\n" + instruction).strip()})
        state.pending = ""

    def apply(self, state: QuestionState, reply: ChatResponse | str, *, last: bool) -> Round:
        """Take the model's reply: an answer (or any reply on the last round) becomes ``state.final``;
        otherwise memory is searched and the results wait in ``state.pending`` for the next round."""
        if state.done:
            raise ValueError(f"question already finished: {state.question.text!r}")
        response = ChatResponse(reply) if isinstance(reply, str) else reply
        action, content, malformed = parse_action(response.text)
        if action == "answer" and not last and echoes(content, state.question.text):
            action, content = "search", ""  # the question copied back answers nothing: it is searched again
        step = Round(action, content, malformed=malformed, prompt_tokens=response.prompt_tokens,
                     completion_tokens=response.completion_tokens, seconds=response.seconds)
        state.rounds.append(step)
        state.messages.append({"role": "assistant", "content": response.text})
        if action == "answer" or last:
            step.action = "answer"
            content = self._ruled(state, step, content)
            state.final, state.end = content, time.perf_counter()
        else:
            state.pending = self.search(state, step, choose_query(content, malformed, state.question.text))
        return step

    def _ruled(self, state: QuestionState, step: Round, content: str) -> str:
        """The answer to give: the first rule's that gives one instead of ``content`` (recorded on ``step``)."""
        if not self.rules:
            return content
        notes = self._notes_shown(state)
        for name, rule in self.rules.items():
            given = rule(state.question.text, state.lessons, notes, content)
            if given is not None:
                step.replaced, step.replaced_by, step.content = content, name, given
                return given
        return content

    @staticmethod
    def _notes_shown(state: QuestionState) -> list[str]:
        """Every line the searches so far returned, as the model read it."""
        return [state.shown(line) for lines in state.notes.values() for line in lines]

    def search(self, state: QuestionState, step: Round, query: str) -> str:
        """Search memory for ``state``'s question (never showing a clip twice), record what came back
        on ``step`` and in ``state.notes``, and return the results as the model reads them."""
        start = time.perf_counter()
        result = self.memory.search(query, video=state.video_id, before_clip=state.question.before_clip,
                                    seen=state.seen)
        step.search_seconds = time.perf_counter() - start
        step.clips = [c.id for c in result.clips]
        step.hits = [{"clip": c.id, "start": c.start, "end": c.end, "score": round(c.score, 4)} for c in result.clips]
        for clip in result.clips:
            state.notes.setdefault(clip.id, []).extend(clip.lines)
        return format_results(query, result, state.shown)

    def finish(self, state: QuestionState) -> Answer:
        """The answer as users read it: names instead of character ids, in the answer and its notes."""
        if state.video_id < 0:
            return Answer(state.question.text, "", state.rounds, 0.0, state.error)
        named = self.namer(state.video_id, state.question.before_clip)  # one lookup for the answer and notes
        text = named(state.final) if state.final is not None else ""
        notes = {clip: [named(line) for line in lines] for clip, lines in state.notes.items()}
        return Answer(state.question.text, text, state.rounds, (state.end or time.perf_counter()) - state.start,
                      state.error, notes, list(state.lessons))

    def shown(self, video_id: int, before_clip: int | None = None) -> Callable[[str], str]:
        """A memory line as the model reads it: known names for ids, except in a line that states a name (it
        maps the id the model may meet elsewhere, where "Alice's name is Alice" would map nothing)."""
        named = self.namer(video_id, before_clip, keep_unnamed=True)
        return lambda line: line if name_statement(line) else named(line)

    def namer(self, video_id: int, before_clip: int | None = None, *,
              keep_unnamed: bool = False) -> Callable[[str], str]:
        """A function replacing character (and face/voice) ids in a text by the names memory knows; a person
        without one becomes "an unnamed person" (for users) or, with ``keep_unnamed``, their character id (for
        the model, which may search for it)."""
        names = self.memory.names(video_id, before_clip)
        cmap = self.memory.characters(video_id, before_clip)
        def sub(kind: str, number: int) -> str | None:
            character = number if kind == "character" else cmap.character_of(number)
            if character in names:
                return names[character]
            if not keep_unnamed:
                return "an unnamed person"
            return None if character is None else f"<character_{character}>"  # None: the tag stays as written

        return lambda text: rewrite_tags(text, sub).strip()
