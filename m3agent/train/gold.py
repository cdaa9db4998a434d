"""Gold replies for the control task: what a policy that knows where the evidence is would say, round by round.

They teach the reply format and the habit the reward pays for before RL starts (a supervised warm start): answer
as soon as the notes shown hold every evidence clip, otherwise search for what is missing, and answer on the last
round whatever happens. A task names its evidence clips (``evidence``) and may give a query that finds each
(``evidence_queries``: clip -> text, e.g. the evidence line); without one, the question is searched again.
"""

from __future__ import annotations

from typing import Any

from m3agent.envs.control import ControlEnv


def gold_reply(env: ControlEnv, task: dict[str, Any]) -> str:
    shown = set(env.state.notes) if env.state is not None else set()
    missing = [int(c) for c in task.get("evidence") or () if int(c) not in shown]
    if not missing or env.round >= env.rounds:
        return f"Action: [Answer]\nContent: {task['answer']}"
    queries = {int(k): v for k, v in (task.get("evidence_queries") or {}).items()}
    return f"Action: [Search]\nContent: {queries.get(missing[0]) or task['question']}"
