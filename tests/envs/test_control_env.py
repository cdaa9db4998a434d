"""The control environment driven by scripted policies over the hand-built kitchen memory."""

import pytest

from m3agent.config import ControlConfig, RewardConfig, load_config
from m3agent.control import KNOWLEDGE_PREFIX, Controller, Question
from m3agent.envs import EnvError
from m3agent.envs.control import ControlEnv
from m3agent.eval.judge import OfflineJudge
from m3agent.eval.rewards import Rewarder
from m3agent.factory import build_env
from m3agent.models.llm.scripted import ScriptedChat

M3 = ControlConfig(seed_search=False)  # M3-Agent's protocol: the model makes every search


def env_for(memory, control=M3, **reward):
    return ControlEnv(memory, Rewarder(OfflineJudge(), RewardConfig(**reward)), control)


def play(env, task, replies):
    """Drive one episode with ``replies`` in turn; every step's result."""
    env.reset(task)
    results = []
    for reply in replies:
        results.append(env.step(reply))
        if results[-1].done:
            break
    return results


def test_search_then_answer_is_judged_right_with_names(kitchen):
    a = kitchen.ids["alice_face"]
    env = env_for(kitchen)
    first = env.reset({"question": "Who opened the fridge?", "answer": "Alice"})
    assert [m["role"] for m in first] == ["system", "user"] and "Round 1 of 5" in first[1]["content"]
    search, answer = play(env, {"question": "Who opened the fridge?", "answer": "Alice"},
                          ["Action: [Search]\nContent: who opens the fridge in the kitchen",
                           f"Action: [Answer]\nContent: <character_{a}> opened it."])
    assert not search.done and search.reward == 0.0 and search.info["round"].clips[0] == 0
    observation = search.observation[-1]
    assert observation["role"] == "user" and observation["content"].startswith(KNOWLEDGE_PREFIX)
    assert "Round 2 of 5" in observation["content"]
    assert env.new_messages(2)[:2] == search.observation[2:]  # the reply and the new user message
    assert answer.done and answer.reward == 1.0
    assert answer.info["answer"] == "Alice opened it." and answer.info["raw_answer"] == f"<character_{a}> opened it."
    assert answer.info["verdict"].correct is True and answer.info["round"].action == "answer"
    assert env.answer.evidence[0]["clip"] == 0
    with pytest.raises(EnvError, match="episode is over"):
        env.step("Action: [Answer]\nContent: again")


def test_wrong_answer_and_unjudged_episode(kitchen):
    env = env_for(kitchen)
    (result,) = play(env, {"question": "Who plays guitar?", "answer": "Bob"}, ["Action: [Answer]\nContent: Alice"])
    assert result.done and result.reward == 0.0 and result.info["verdict"].correct is False
    (result,) = play(env, {"question": "Who plays guitar?"}, ["Action: [Answer]\nContent: Bob"])  # no reference
    assert result.reward == 0.0 and result.info["verdict"].correct is None


def test_malformed_replies_are_searched_and_the_last_round_is_forced(kitchen):
    env = env_for(kitchen, ControlConfig(max_rounds=3, seed_search=False), malformed_penalty=0.1, round_cost=0.05)
    results = play(env, {"question": "Who plays guitar?", "answer": "Bob"},
                   ["the guitar on the sofa", "Action: [Search]\nContent: guitar concert",
                    "Action: [Search]\nContent: Bob plays guitar", "never asked"])
    assert len(results) == 3 and [r.done for r in results] == [False, False, True]
    assert results[0].info["round"].malformed and results[0].info["round"].clips  # searched as it stands
    assert "last round" in results[1].observation[-1]["content"]  # round 3 of 3 forces the answer
    last = results[-1]
    assert last.info["round"].action == "answer"  # a search on the last round is the answer
    assert last.info["answer"] == "Bob plays guitar" and last.info["verdict"].correct is True
    assert last.reward == pytest.approx(1.0 - 0.1 - 3 * 0.05)
    assert last.info["reward"].malformed == 1 and last.info["reward"].rounds == 3


def test_abort_ends_without_an_answer(kitchen):
    env = env_for(kitchen)
    env.reset({"question": "Who plays guitar?", "answer": "Bob"})
    env.step("Action: [Search]\nContent: guitar")
    result = env.abort("out of tokens")
    assert result.done and result.reward == 0.0 and result.info["answer"] == ""
    assert result.info["error"] == "out of tokens" and result.info["verdict"].reason == "no answer"


def test_bad_tasks_and_order(kitchen):
    env = env_for(kitchen)
    with pytest.raises(EnvError, match="before reset"):
        env.step("Action: [Answer]\nContent: x")
    with pytest.raises(EnvError, match="needs a question"):
        env.reset({"question": "  "})
    with pytest.raises(EnvError, match="no_such_video"):
        env.reset({"question": "Who?", "video": "no_such_video"})


def test_same_protocol_as_the_controller(kitchen):
    """The bench and the app (Controller) and training (the env) send the model the very same messages."""
    a = kitchen.ids["alice_face"]
    replies = ["Action: [Search]\nContent: who opens the fridge", f"Action: [Answer]\nContent: <character_{a}>"]
    chat = ScriptedChat(replies)
    answer = Controller(kitchen, chat, ControlConfig()).answer(Question("Who opened the fridge?", before_clip=2))
    env = env_for(kitchen, ControlConfig())
    observations = [list(env.reset({"question": "Who opened the fridge?", "before_clip": 2, "answer": "Alice"}))]
    for reply in replies:
        result = env.step(reply)
        observations.append(list(result.observation))
    assert observations[:2] == chat.calls  # seed search, instructions and results alike
    assert result.info["answer"] == answer.answer == "Alice"
    assert [(r.action, r.content, r.clips, r.by) for r in env.answer.rounds] == \
        [(r.action, r.content, r.clips, r.by) for r in answer.rounds]


def test_factory_builds_the_env_from_config(kitchen):
    config = load_config(None, {}, ["train.reward.id_penalty=0.5", "control.seed_search=false"])
    env = build_env(config, memory=kitchen)
    assert isinstance(env, ControlEnv) and env.rewarder.config.id_penalty == 0.5
    assert env.control.config.seed_search is False
    a = kitchen.ids["alice_face"]
    (result,) = play(env, {"question": "Who opened the fridge?", "answer": "Alice"},
                     [f"Action: [Answer]\nContent: <character_{a}>"])
    assert result.info["answer"] == "Alice" and result.reward == pytest.approx(0.5)  # right, but ids left
    with pytest.raises(EnvError, match="needs memory"):
        build_env(config)


def test_a_task_brings_its_own_lessons_in_place_of_memorys(kitchen):
    env = env_for(kitchen)
    lesson = 'Asked "Who cooks pasta?", the answer "Alice" was wrong; the user corrected it: "Bob".'
    system = env.reset({"question": "Who opened the fridge?", "answer": "Alice", "lessons": [lesson]})[0]["content"]
    assert system.rstrip().endswith(f"- {lesson}") and "What this user told you" in system
    plain = env.reset({"question": "Who opened the fridge?", "answer": "Alice"})[0]["content"]
    assert "What this user told you" not in plain  # this memory holds no lesson


def test_training_rewards_the_models_own_answer_not_the_held_correction(kitchen):
    lesson = 'Asked "Who plays guitar?", the answer "Alice" was wrong; the user corrected it: "Bob".'
    task = {"question": "Who plays guitar?", "answer": "Bob", "lessons": [lesson]}
    (result,) = play(env_for(kitchen), task, ["Action: [Answer]\nContent: Alice"])
    assert result.reward == 0.0 and result.info["answer"] == "Alice"  # in use the step would give "Bob"
    (result,) = play(env_for(kitchen), task, ["Action: [Answer]\nContent: Bob"])
    assert result.reward == 1.0
