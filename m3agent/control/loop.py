"""The control process with a chat model: many questions through their rounds in lock step.

:meth:`Controller.answer_many` makes one ``chat.batch`` call per round, so a batching backend (vLLM, a
concurrent server client) sees the questions together; every round itself is :class:`ControlStep`'s.
:meth:`Controller.iter_answers` hands out each answer as soon as its question is done, so a batch job
can save it before the others finish.
A conversation that outgrows the context window loses its oldest search results first; a question
whose model call fails for good gets an :class:`Answer` with ``error`` set, and the others go on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence

from m3agent.config import ControlConfig
from m3agent.control.protocol import AnswerRule, ControlStep, FollowUp, Memory, QuestionState
from m3agent.control.records import Answer, Question
from m3agent.control.text import drop_oldest_results
from m3agent.models.llm.base import ChatError, ChatModel, ChatResponse, ContextOverflowError

log = logging.getLogger(__name__)


class Controller:
    def __init__(self, graph: Memory, chat: ChatModel, config: ControlConfig | None = None,
                 rules: Mapping[str, AnswerRule] | None = None, follow: FollowUp | None = None):
        self.graph, self.chat, self.config = graph, chat, config or ControlConfig()
        self.step = ControlStep(graph, self.config, rules, follow)

    def answer(self, question: Question, *, raise_failure: bool = True) -> Answer:
        """One question, its video resolved once (by :meth:`ControlStep.start`). A question memory cannot
        answer (a video memory lacks or holds no clip of; an empty one or a bad ``before_clip`` is no
        :class:`Question`) raises its error before any model call. A model failure raises :class:`ChatError`;
        with ``raise_failure=False`` it comes back as the answer's ``error``, with the rounds before it."""
        state = self.step.start(question, strict=True)
        [(_, answer)] = self._rounds([state])
        if answer.error and raise_failure:
            raise ChatError(answer.error)
        return answer

    def answer_many(self, questions: Sequence[Question],
                    on_round: Callable[[int, int], None] | None = None) -> list[Answer]:
        """Answers in question order; ``on_round(round, questions still open)`` reports progress."""
        answers = dict(self.iter_answers(questions, on_round))
        return [answers[index] for index in range(len(questions))]

    def iter_answers(self, questions: Sequence[Question],
                     on_round: Callable[[int, int], None] | None = None) -> Iterator[tuple[int, Answer]]:
        """``(index, answer)`` for each question as soon as it is finished, while the others go on with their
        rounds: a caller that saves each one loses none of them when the run is stopped mid-batch."""
        yield from self._rounds([self.step.start(q) for q in questions], on_round)

    def _rounds(self, states: list[QuestionState],
                on_round: Callable[[int, int], None] | None = None) -> Iterator[tuple[int, Answer]]:
        """Drive started questions through their rounds in lock step, yielding each answer when it is done."""
        open_ = yield from self._finished(states, range(len(states)))  # those that failed at the start
        total = self.step.rounds
        for number in range(1, total + 1):
            if not open_:
                break
            active = [states[i] for i in open_]
            if on_round:
                on_round(number, len(active))
            for state in active:
                self.step.instruct(state, number, total)
            for state, reply in zip(active, self._replies(active)):
                if reply is not None:
                    self.step.apply(state, reply, last=number == total)
            open_ = yield from self._finished(states, open_)

    def _finished(self, states: list[QuestionState],
                  indices: Iterable[int]) -> Generator[tuple[int, Answer], None, list[int]]:
        """Yield ``(index, answer)`` for each finished question among ``indices``; return the open ones."""
        still_open = []
        for index in indices:
            if states[index].done:
                yield index, self.step.finish(states[index])
            else:
                still_open.append(index)
        return still_open

    def _replies(self, active: list[QuestionState]) -> list[ChatResponse | None]:
        """One reply per conversation (None where it failed); on a batch failure, each on its own."""
        try:
            return self.chat.batch([s.messages for s in active], **self.step.sampling)
        except ChatError as exc:
            if len(active) > 1 or isinstance(exc, ContextOverflowError):
                log.info("batch of %d failed (%s); asking one by one", len(active), exc)
            else:
                active[0].fail(str(exc))
                return [None]
        return [self._reply_fitting(state) for state in active]

    def _reply_fitting(self, state: QuestionState) -> ChatResponse | None:
        """Ask for one reply, dropping the oldest search results while the conversation is too long."""
        while True:
            try:
                return self.chat.chat(state.messages, **self.step.sampling)
            except ContextOverflowError as exc:
                if not drop_oldest_results(state.messages):
                    state.fail(f"the question does not fit the model's context window: {exc}")
                    return None
            except ChatError as exc:
                state.fail(str(exc))
                return None
