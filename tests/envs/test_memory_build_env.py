"""The memory-construction environment end to end with scripted policies: the reward follows downstream QA
accuracy and the memory-size penalty, so a policy that keeps the answers in few words beats one that keeps
nothing and one that keeps everything; malformed replies cost the format penalty; episodes clean up."""

import json

import pytest

from m3agent.config import MemoryBuildConfig, TrainConfig, load_config
from m3agent.envs.base import EnvError
from m3agent.envs.memory_build import MemoryBuildEnv
from m3agent.eval.judge import OfflineJudge
from m3agent.samples.episode import PEOPLE, SCRIPT

FILLER = "It was a long day and the weather was grey, so everyone stayed around and talked about many things."
CHUNKS = [{"id": str(i), "text": f"{line} {FILLER}", "speaker": PEOPLE[person][1]}
          for i, (person, _, line) in enumerate(SCRIPT) if person is not None]
QUESTIONS = [
    {"question": "Where does David keep his bicycle?", "answer": "in the garage"},
    {"question": "What did Sarah buy at the market?", "answer": "a red umbrella"},
    {"question": "Which city does Sarah's sister live in?", "answer": "Toronto"},
    {"question": "Where are the car keys?", "answer": "in the blue bowl"},
]
FACTS = {"garage": "David keeps his bicycle in the garage.", "umbrella": "Sarah bought a red umbrella at the market.",
         "Toronto": "Sarah's sister lives in Toronto.", "bowl": "The car keys are in the blue bowl."}
TASK = {"id": "episode", "chunks": CHUNKS, "questions": QUESTIONS}


def chunk_text(messages):
    return messages[-1]["content"].split("New chunk:\n", 1)[1].rsplit("\n\nReply with", 1)[0]


def keep_answers(messages):
    text = chunk_text(messages)
    return "\n".join(json.dumps({"tool": "insert", "kind": "semantic", "text": fact})
                     for word, fact in FACTS.items() if word in text)


def keep_everything(messages):
    return json.dumps({"tool": "insert", "kind": "episodic", "text": chunk_text(messages)})


def keep_nothing(messages):
    return "Nothing here is worth keeping."


def play(env, policy, task=TASK):
    messages = env.reset(task)
    while True:
        result = env.step(policy(messages))
        if result.done:
            return result
        assert result.reward == 0.0
        messages = result.observation


@pytest.fixture
def env(embedder, tmp_path):
    env = MemoryBuildEnv(embedder, OfflineJudge(), MemoryBuildConfig(chunk_records=1), workdir=str(tmp_path))
    yield env
    env.close()


def test_keeping_the_answers_beats_keeping_nothing_or_everything(env, tmp_path):
    answers, everything, nothing = (play(env, p) for p in (keep_answers, keep_everything, keep_nothing))
    assert answers.info["accuracy"] == 1.0 and everything.info["accuracy"] == 1.0 and nothing.info["accuracy"] == 0.0
    assert answers.reward > everything.reward > nothing.reward == 0.0
    assert everything.info["size_ratio"] == pytest.approx(1.0)
    assert everything.reward == pytest.approx(1.0 - 0.2)
    small = answers.info["memory_chars"] / answers.info["stream_chars"]
    assert answers.reward == pytest.approx(1.0 - 0.2 * small) and small < 0.2
    assert answers.info["memory_lines"] == 4 and answers.info["calls"] == 4
    assert [v["correct"] for v in answers.info["verdicts"]] == [True] * 4
    assert "garage" in answers.info["recalled"][0]
    assert list(tmp_path.iterdir()) == []  # every episode's DB is gone


def test_half_the_answers_score_half_the_accuracy(env):
    def keep_two(messages):
        text = chunk_text(messages)
        return "\n".join(json.dumps({"tool": "insert", "kind": "semantic", "text": fact})
                         for word, fact in FACTS.items() if word in text and word in ("garage", "Toronto"))

    result = play(env, keep_two)
    assert result.info["accuracy"] == 0.5 and result.info["correct"] == 2
    assert 0.4 < result.reward < 0.5


def test_observations_grow_as_one_conversation_and_show_results(env):
    messages = env.reset(TASK)
    assert [m["role"] for m in messages] == ["system", "user"] and "Chunk 1 of 9." in messages[1]["content"]
    assert "Where does David" not in json.dumps(messages)  # questions are held out
    result = env.step('{"tool": "insert", "kind": "core", "text": "David, Sarah and Peter are neighbours."}\n{oops')
    assert [m["role"] for m in result.observation] == ["system", "user", "assistant", "user"]
    seen = result.observation[-1]["content"]
    assert "Chunk 2 of 9." in seen and "David, Sarah and Peter are neighbours." in seen
    assert "ERROR: line 2 is not one JSON object" in seen
    assert env.new_messages(3) == [result.observation[-1]]
    assert result.info["chunk"] == 1 and len(result.info["calls"]) == 2


def test_malformed_replies_cost_the_format_penalty(env):
    clean = play(env, keep_answers)
    sloppy = play(env, lambda m: keep_answers(m) + "\n{not a call")
    assert sloppy.info["malformed_share"] == 1.0 and sloppy.info["accuracy"] == 1.0
    assert sloppy.reward == pytest.approx(clean.reward - 0.1)


def test_clip_descriptions_and_updates_in_an_episode(env):
    task = {"chunks": ["<face_1> puts the keys in the drawer.", "<face_1> moves the keys to the blue bowl."],
            "questions": [{"question": "Where are the keys now?", "answer": "blue bowl"}]}

    def track_keys(messages):
        text = chunk_text(messages)
        if "drawer" in text:
            return json.dumps({"tool": "insert", "kind": "semantic", "text": "The keys are in the drawer."})
        line = messages[-1]["content"].split("related to this chunk:\n", 1)[1].split("]", 1)[0].lstrip("[")
        return json.dumps({"tool": "update", "kind": "semantic", "id": int(line), "text": "The keys are in the blue bowl."})

    result = play(env, track_keys, task)
    assert result.info["accuracy"] == 1.0 and result.info["memory_lines"] == 1 and result.info["failed_calls"] == 0


def test_out_of_order_use_and_bad_tasks_are_env_errors(env):
    with pytest.raises(EnvError, match="reset"):
        env.step("{}")
    for task in ({"chunks": CHUNKS}, {"questions": QUESTIONS}, "text", {"chunks": [3], "questions": QUESTIONS},
                 {"chunks": CHUNKS, "questions": [{"question": "no answer"}]}):
        with pytest.raises(EnvError):
            env.reset(task)
    play(env, keep_nothing)
    with pytest.raises(EnvError, match="over"):
        env.step("{}")


def test_built_from_the_training_config(embedder, tmp_path):
    config = load_config(overrides=["train.memory_build.size_penalty=0.5", "train.memory_build.chunk_records=1"])
    assert isinstance(config.train, TrainConfig)
    env = MemoryBuildEnv.from_config(config.train, embedder=embedder, judge=OfflineJudge())
    env.workdir = str(tmp_path)
    assert env.config.size_penalty == 0.5
    assert play(env, keep_everything).reward == pytest.approx(0.5)


def test_the_factory_builds_it_by_name_with_the_training_judge(embedder, tmp_path):
    from m3agent import factory

    config = load_config(overrides=["train.memory_build.chunk_records=1"])
    env = factory.build_env(config, "memory-build", embedder=embedder)
    assert isinstance(env, MemoryBuildEnv) and isinstance(env.judge, OfflineJudge)
    env.workdir = str(tmp_path)
    assert play(env, keep_answers).info["accuracy"] == 1.0


def test_the_factory_builds_the_configured_embedder_when_none_is_given(tmp_path):
    from m3agent import factory
    from m3agent.models.embed.hashing import HashingEmbedder

    config = load_config(overrides=["embedder.backend=hashing", "embedder.model=256",
                                    "train.memory_build.chunk_records=1"])
    env = factory.build_env(config, "memory-build")
    assert isinstance(env.embedder, HashingEmbedder) and env.embedder.name == "hashing-256"
    env.workdir = str(tmp_path)
    assert play(env, keep_answers).info["accuracy"] == 1.0


def test_the_users_memory_settings_reach_the_episode_memory(tmp_path):
    from m3agent import factory

    config = load_config(overrides=["embedder.backend=hashing", "embedder.model=256", "memory.search.top_k=7",
                                    "memory.index.ann_threshold=123"])
    env = factory.build_env(config, "memory-build", judge=None)
    env.workdir = str(tmp_path)
    try:
        env.reset(TASK)
        assert env.graph.config == config.memory and env.graph.config.search.top_k == 7
    finally:
        env.close()
