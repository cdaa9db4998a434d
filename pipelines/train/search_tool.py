"""Memory search as a verl tool (``verl.tools.base_tool.BaseTool``), for verl's function-calling loops.

The control loop of ``agent_loop.py`` needs no tool: it searches through :class:`m3agent.envs.control.ControlEnv`
from the model's ``Action: [Search]`` text. This tool offers the same search to a model that calls
functions (verl's built-in ``tool_agent`` loop, hermes format): the query runs through the same
:class:`m3agent.control.ControlStep` search, so the model reads exactly the results the control prompt
shows (``CLIP_k (mm:ss-mm:ss):`` blocks of memory lines), and no clip comes back twice for one question.

Each instance is one question: ``create_kwargs`` (the dataset's ``extra_info.tools_kwargs.memory_search``)
name the memory DB, the video, ``before_clip`` and the question. verl's ``tool_agent`` creates and releases
an instance around every call; the clips already shown then live on the trajectory's ``agent_data``, so
later calls still skip them. The tool's own reward is 0: correctness is judged on the final answer
(``reward_fn.py``). Listed in ``config/tool_config.yaml``; the ``config`` there may carry an ``m3agent``
section like the trainer config's (see ``runtime.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from m3agent.control.protocol import ControlStep, QuestionState
from m3agent.control.records import Question, Round
from m3agent.errors import M3AgentError
from m3agent.memory.search import check_before_clip
from m3agent.train.tasks import TOOL_NAME
from pipelines.train.runtime import runtime

SEEN_ATTR = "m3agent_seen_clips"  # where a trajectory's shown clips live on verl's agent_data

SCHEMA = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Search the memory of the video (notes written while watching it, 30 seconds at a time) "
                       "and get back the clips whose notes best match the query. People appear as ids such as "
                       "<character_3>; ask 'What is the name of <character_3>' or 'What is the character id of "
                       "Alice' to map ids and names.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to look for; different each call"}},
            "required": ["query"],
        },
    },
}


class MemorySearchTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None):
        super().__init__(config, tool_schema or OpenAIFunctionToolSchema.model_validate(SCHEMA))
        self.runtime = runtime((config or {}).get("m3agent"))
        # the model makes every search itself: no seed search of the question
        self.control = dataclasses.replace(self.runtime.config.control, seed_search=False)
        self.sessions: dict[str, tuple[ControlStep, QuestionState]] = {}

    async def create(self, instance_id: str | None = None, **kwargs) -> tuple[str, ToolResponse]:
        """One question's search session; its settings come in ``create_kwargs`` (verl's ``tool_agent``) or as
        keywords: ``memory`` (DB path), ``question``, and optionally ``video`` and ``before_clip``."""
        instance_id = instance_id or uuid4().hex
        spec = kwargs.get("create_kwargs", kwargs)
        step = ControlStep(self.runtime.shelf.get(spec["memory"]), self.control)
        question = Question(str(spec.get("question") or "(a question about the video)"),
                            check_before_clip(spec.get("before_clip"), gaps=True), spec.get("video") or None)
        state = step.start(question)
        if state.error:
            raise M3AgentError(state.error)
        self.sessions[instance_id] = (step, state)
        return instance_id, ToolResponse()

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        step, state = self.sessions[instance_id]
        agent_data = kwargs.get("agent_data")
        if agent_data is not None:  # tool_agent makes a new instance per call: share the shown clips
            state.seen = getattr(agent_data, SEEN_ATTR, None) or state.seen
            setattr(agent_data, SEEN_ATTR, state.seen)
        query = str((parameters or {}).get("query") or "").strip() or state.question.text
        record = Round("search", query, by="tool")
        text = step.search(state, record, query)
        state.rounds.append(record)
        metrics = {"clips": len(record.clips), "empty": not record.clips, "search_seconds": record.search_seconds}
        return ToolResponse(text=text), 0.0, metrics

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs) -> None:
        self.sessions.pop(instance_id, None)

