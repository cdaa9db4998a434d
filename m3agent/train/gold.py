"""Gold replies for the control task: what a policy that knows where the evidence is would say, round by round.

They teach the reply format and the habits the reward pays for before RL starts (a supervised warm start): answer
as soon as the notes shown hold every evidence clip, otherwise search for what is missing, and answer on the last
round whatever happens. A task names its evidence clips (``evidence``) and may give a query that finds each
(``evidence_queries``: clip -> text): a question of two hops gives the query for its second hop with the person's
name in place of the description ("What does Frederik do for a living?" for "What does the person who grew up in
Krakow do for a living?"), searched only once the clips of the first hop are shown, where a reader would have found
the name. It answers with ``worked`` where the task has it (a total with its sum written out), else with the
reference ``answer``.

Without such a query the gold policy searches the question again, if that would bring a missing evidence clip
(asking memory the way the environment will): so a question about what holds *now* learns to search again for
the later clip instead of answering from the first notes. A question the user corrected before (a lesson about it,
``corrected``) is answered with the correction at once: the user knows, whatever the notes say. (Search results
show people by the names memory knows, so no round goes to looking a name up.)
"""

from __future__ import annotations

from typing import Any

from m3agent.envs.control import ControlEnv
from m3agent.memory.search import SeenClips


def gold_reply(env: ControlEnv, task: dict[str, Any]) -> str:
    state = env.state
    shown = set(state.notes) if state is not None else set()
    missing = [int(c) for c in task.get("evidence") or () if int(c) not in shown]
    if not missing or task.get("corrected") or env.round >= env.rounds or state is None:
        return f"Action: [Answer]\nContent: {task.get('worked') or task['answer']}"
    queries = {int(k): v for k, v in (task.get("evidence_queries") or {}).items()}
    found_first = all(int(c) in shown for c in task.get("evidence") or () if int(c) not in queries)
    given = [queries[c] for c in missing if queries.get(c)] if found_first else []
    asked = {r.content for r in state.rounds}
    candidates = [q for q in dict.fromkeys(given + [task["question"]]) if q not in asked]
    query = next((q for q in candidates if reaches(env, q, missing)), None)
    return f"Action: [Search]\nContent: {query or task['question']}"


def reaches(env: ControlEnv, query: str, missing: list[int]) -> bool:
    """Whether searching ``query`` now would show one of the ``missing`` clips (memory is asked as the
    environment would ask it, with a copy of the clips already shown, so nothing changes)."""
    state = env.state
    found = env.control.memory.search(query, video=state.video_id, before_clip=state.question.before_clip,
                                      seen=SeenClips(set(state.seen.clips)))
    return any(clip.id in missing for clip in found.clips)
