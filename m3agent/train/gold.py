"""Gold replies for the control task: what a policy that knows where the evidence is would say, round by round.

They teach the reply format and the habits the reward pays for before RL starts (a supervised warm start): answer
as soon as the notes shown hold every evidence clip, otherwise search for what is missing, and answer on the last
round whatever happens. A task names its evidence clips (``evidence``) and may give a query that finds each
(``evidence_queries``: clip -> text, e.g. the evidence line).

Without such a query the gold policy tries the searches a good reader would (the question again; the name of a
person the notes show only as an id, the way the prompt teaches: ``What is the name of <character_3>``) and
sends the first that would bring a missing evidence clip, asking memory the way the environment will. So a "who
said" question whose speaker is only an id in the notes learns to look up the id's name, and a question about
what holds *now* learns to search again for the later clip, instead of answering from the first notes.
"""

from __future__ import annotations

import re
from typing import Any

from m3agent.envs.control import ControlEnv
from m3agent.memory.search import SeenClips

ID_TAG = re.compile(r"<character_(\d+)>")


def gold_reply(env: ControlEnv, task: dict[str, Any]) -> str:
    state = env.state
    shown = set(state.notes) if state is not None else set()
    missing = [int(c) for c in task.get("evidence") or () if int(c) not in shown]
    if not missing or env.round >= env.rounds or state is None:
        return f"Action: [Answer]\nContent: {task['answer']}"
    queries = {int(k): v for k, v in (task.get("evidence_queries") or {}).items()}
    given = [queries[c] for c in missing if queries.get(c)]
    asked = {r.content for r in state.rounds}
    candidates = [q for q in dict.fromkeys(given + search_candidates(env, task)) if q not in asked]
    query = next((q for q in candidates if reaches(env, q, missing)), None)
    return f"Action: [Search]\nContent: {query or task['question']}"


def search_candidates(env: ControlEnv, task: dict[str, Any]) -> list[str]:
    """Queries worth trying next, most specific first: the name of an id the notes show without one whose name
    is in the reference answer, the question itself, then the name of every other such id."""
    state = env.state
    lines = [line for clip in state.notes.values() for line in clip]
    named = env.control.memory.names(state.video_id, state.question.before_clip)
    answer = str(task.get("answer") or "").lower()
    unnamed = [int(n) for n in dict.fromkeys(ID_TAG.findall("\n".join(lines)))
               if not any(line.startswith(f"<character_{n}>'s name is") for line in lines)]
    in_answer = [n for n in unnamed if named.get(n) and re.search(rf"\b{re.escape(named[n].lower())}\b", answer)]
    rest = [n for n in unnamed if n not in in_answer]
    ask = "What is the name of <character_{}>".format
    return [ask(n) for n in in_answer] + [task["question"]] + [ask(n) for n in rest]


def reaches(env: ControlEnv, query: str, missing: list[int]) -> bool:
    """Whether searching ``query`` now would show one of the ``missing`` clips (memory is asked as the
    environment would ask it, with a copy of the clips already shown, so nothing changes)."""
    state = env.state
    found = env.control.memory.search(query, video=state.video_id, before_clip=state.question.before_clip,
                                      seen=SeenClips(set(state.seen.clips)))
    return any(clip.id in missing for clip in found.clips)
