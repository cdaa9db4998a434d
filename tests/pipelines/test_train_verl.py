"""pipelines/train against verl 0.9.1 itself, on CPU: the configs compose with Hydra on verl's ppo_trainer.yaml
and pass verl's validation, the search tool runs real searches, and the agent loop runs whole episodes the
way verl's own agent-loop tests do (a fake token server, a tokenizer built here, ``await loop.run(...)``),
on rows that verl's own RLHFDataset read from the Parquet ``m3agent train-data`` wrote: control questions, and
memory-build streams whose reward must be the one the memory-build env gives the same replies.

verl is optional (``bash scripts/setup_verl.sh``, then PYTHONPATH=.venv/verl-0.9.1); without it these skip.
No rollout engine runs here: verl has none for CPU (vllm, sglang and trtllm need a GPU).
"""

import asyncio
import itertools
import json
import os
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.verl
pytest.importorskip("verl", reason="verl is not installed: bash scripts/setup_verl.sh, then run with "
                                   "PYTHONPATH=.venv/verl-0.9.1 (see pipelines/train/README.md)")

import hydra  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from verl.experimental.agent_loop.agent_loop import (  # noqa: E402
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.tools.tool_registry import initialize_tools_from_config  # noqa: E402
from verl.trainer.ppo.reward import get_custom_reward_fn  # noqa: E402
from verl.trainer.ppo.utils import create_rl_dataset, need_critic, need_reference_policy  # noqa: E402
from verl.utils.config import omega_conf_to_dataclass, validate_config  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from m3agent.config import Config  # noqa: E402
from m3agent.control import ControlStep, format_results  # noqa: E402
from m3agent.train.dataset import build_dataset  # noqa: E402
from m3agent.train.tasks import AGENT_NAME, MEMORY_BUILD_AGENT, TOOL_NAME  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "pipelines" / "train" / "config"
CHATML = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
          "{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{%- endif %}")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A local model directory verl can load offline: a Qwen2 config and a byte-level tokenizer with ChatML."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config

    folder = tmp_path_factory.mktemp("tiny-qwen2")
    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=["<|im_start|>"])
    fast.chat_template = CHATML
    fast.save_pretrained(folder)
    Qwen2Config(vocab_size=len(fast), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                num_attention_heads=2, num_key_value_heads=1, architectures=["Qwen2ForCausalLM"]).save_pretrained(folder)
    return folder


@pytest.fixture
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def composed(name, tiny_model, *overrides):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        return compose(config_name=name, overrides=[f"actor_rollout_ref.model.path={tiny_model}", *overrides])


@pytest.fixture
def train_rows(kitchen, db_path, tmp_path):
    """``m3agent train-data`` output for two videos whose memory is the kitchen episode."""
    kitchen.close()
    memories = tmp_path / "memories"
    memories.mkdir()
    qa = {"Who opened the fridge?": "Alice", "Who plays the guitar?": "Bob"}
    annotations = {}
    for video in ("home_01", "home_02"):
        shutil.copy(db_path, memories / f"{video}.db")
        annotations[video] = {"video_path": f"videos/{video}.mp4", "mem_path": f"memories/{video}.pkl", "qa_list": [
            {"question": q, "answer": a, "question_id": f"{video}_Q{i}", "timestamp": "02:00", "type": ["Person"]}
            for i, (q, a) in enumerate(qa.items(), 1)]}
    path = tmp_path / "home.json"
    path.write_text(json.dumps(annotations), encoding="utf-8")
    summary = build_dataset(path, memories, tmp_path / "data", Config(), val_fraction=0.0)
    assert summary["train"] == 4
    return tmp_path / "data" / "train.parquet"


# ------------------------------------------------------------------------------------------------ configs
@pytest.mark.parametrize("name", ["ppo", "grpo", "dapo"])
def test_configs_compose_on_verl_ppo_trainer_and_validate(name, tiny_model):
    cfg = composed(name, tiny_model)
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    for section in (cfg.algorithm, cfg.actor_rollout_ref.rollout, cfg.actor_rollout_ref.rollout.agent):
        omega_conf_to_dataclass(section)  # verl's typed configs accept every key we set
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == AGENT_NAME
    assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (1, 8)
    assert OmegaConf.select(cfg, "m3agent.overrides") == []
    assert cfg.reward.custom_reward_function.path == "pipelines/train/reward_fn.py"
    if name == "ppo":
        assert cfg.algorithm.adv_estimator == "gae" and need_critic(cfg) and cfg.actor_rollout_ref.rollout.n == 1
    if name == "grpo":
        assert cfg.algorithm.adv_estimator == "grpo" and not need_critic(cfg) and need_reference_policy(cfg)
    if name == "dapo":  # M3-Agent's settings
        actor = cfg.actor_rollout_ref.actor
        assert (cfg.actor_rollout_ref.rollout.n, cfg.data.train_batch_size, actor.optim.lr) == (4, 32, 1e-6)
        assert (actor.clip_ratio_low, actor.clip_ratio_high) == (0.2, 0.28) and actor.loss_agg_mode == "token-mean"
        assert cfg.algorithm.filter_groups.enable and not need_critic(cfg) and not need_reference_policy(cfg)
        assert cfg.trainer.total_training_steps == 180


def test_multi_node_is_an_override(tiny_model):
    cfg = composed("dapo", tiny_model, "trainer.nnodes=4", "actor_rollout_ref.rollout.tensor_model_parallel_size=8")
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))


def test_launch_script_runs_main_ppo_with_overrides_that_compose(tmp_path, tiny_model):
    import subprocess

    data, dump = tmp_path / "data", tmp_path / "args.txt"
    data.mkdir()
    (data / "train.parquet").write_bytes(b"")
    fake = tmp_path / "python"  # stands in for the interpreter: records what it was asked to run
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$RAY_ADDRESS" "$PYTHONPATH" "$@" > "$DUMP"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "DATA": str(data), "MODEL": str(tiny_model), "NNODES": "2",
           "GPUS": "4", "DUMP": str(dump)}
    env.pop("RAY_ADDRESS", None)
    launch = ["bash", str(ROOT / "pipelines" / "train" / "launch.sh")]
    done = subprocess.run([*launch, "grpo", "trainer.total_training_steps=3"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "validating on the training set" in done.stderr
    ray_address, pythonpath, *args = dump.read_text().splitlines()
    assert ray_address == "auto" and pythonpath.split(":")[0] == str(ROOT)
    assert args[:2] == ["-m", "verl.trainer.main_ppo"]
    assert args[2] == f"--config-path={CONFIGS}" and args[3] == "--config-name=grpo"
    with initialize_config_dir(config_dir=args[2].split("=", 1)[1], version_base=None):
        cfg = compose(config_name="grpo", overrides=args[4:])
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node, cfg.trainer.total_training_steps) == (2, 4, 3)
    assert cfg.data.val_files == cfg.data.train_files == str(data / "train.parquet")
    assert subprocess.run([*launch, "dapo"], env={**env, "DATA": str(tmp_path / "none")},
                          capture_output=True).returncode == 2
    assert subprocess.run([*launch, "sft"], env=env, capture_output=True).returncode == 2


def test_agent_loop_and_tool_configs_load_as_verl_loads_them():
    entries = {entry.name: entry for entry in OmegaConf.load(CONFIGS / "agent_loop.yaml")}
    loops = {AGENT_NAME: "M3AgentControlLoop", MEMORY_BUILD_AGENT: "M3AgentMemoryBuildLoop"}
    assert set(entries) == set(loops)
    for name, cls in loops.items():
        assert hydra.utils.get_class(entries[name]._target_).__name__ == cls
        assert _agent_loop_registry[name] == {"_target_": f"pipelines.train.agent_loop.{cls}"}
    (tool,) = initialize_tools_from_config(str(CONFIGS / "tool_config.yaml"))
    assert tool.name == TOOL_NAME and tool.tool_schema.function.parameters.required == ["query"]


# ------------------------------------------------------------------------------------------------ tool
def test_search_tool_runs_real_searches(kitchen):
    from pipelines.train.search_tool import SEEN_ATTR, MemorySearchTool

    (tool,) = initialize_tools_from_config(str(CONFIGS / "tool_config.yaml"))
    assert isinstance(tool, MemorySearchTool)
    spec = {"memory": str(kitchen.store.path), "video": "kitchen", "before_clip": None, "question": "Who?"}

    async def episode():
        instance, _ = await tool.create(create_kwargs=spec)
        first = await tool.execute(instance, {"query": "who opens the fridge in the kitchen"})
        again = await tool.execute(instance, {"query": "who opens the fridge in the kitchen"})
        assert await tool.calc_reward(instance) == 0.0
        await tool.release(instance)

        class AgentData:  # verl's tool_agent recreates the instance on every call, with the same agent_data
            pass

        data, shown = AgentData(), []
        for _ in range(2):
            other, _ = await tool.create(create_kwargs=spec)
            shown.append(await tool.execute(other, {"query": "guitar on the sofa"}, agent_data=data))
            await tool.release(other)
        return first, again, shown, data

    first, again, shown, data = asyncio.run(episode())
    response, reward, metrics = first
    assert reward == 0.0 and metrics["clips"] >= 1 and not metrics["empty"]
    result = kitchen.search("who opens the fridge in the kitchen", video=kitchen.video)
    display = ControlStep(kitchen).shown(kitchen.video)  # known names for ids, as the control step shows lines
    assert response.text == format_results("who opens the fridge in the kitchen", result, display)
    assert "CLIP_0" in response.text and "opens the fridge" in response.text
    assert "CLIP_0" not in again[0].text  # a clip is shown once per question
    assert shown[0][2]["clips"] >= 1 and not set(_clips(shown[0][0].text)) & set(_clips(shown[1][0].text))
    assert getattr(data, SEEN_ATTR).clips
    assert not tool.sessions


def _clips(text):
    return [line.split(" ", 1)[0] for line in text.splitlines() if line.startswith("CLIP_")]


# ------------------------------------------------------------------------------------------------ agent loop
class FakeServer:
    """Stands in for verl's LLM server client: decodes the prompt, answers with a scripted policy."""

    def __init__(self, tokenizer, policy):
        self.tokenizer, self.policy, self.calls = tokenizer, policy, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        prompt = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        self.calls.append((prompt, dict(sampling_params)))
        reply = self.policy(len(self.calls), prompt)
        ids = self.tokenizer.encode(reply, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        ids = ids[:sampling_params["max_tokens"]]
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed")


def run_loop(cfg, tokenizer, server, row):
    """What verl's AgentLoopWorker does per trajectory: instantiate the loop the row names, await run."""
    async def go():
        loop = hydra.utils.instantiate(
            config=_agent_loop_registry[row["agent_name"]], trainer_config=DictConfigWrap(cfg), server_manager=server,
            tokenizer=tokenizer, processor=None, hf_model_type="qwen2", dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(cfg.data), tools=ToolListWrap([]))
        params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
        return await loop.run(params, **row)

    return asyncio.run(go())


def dataset_rows(parquet, cfg, tokenizer):
    data = create_rl_dataset([str(parquet)], cfg.data, tokenizer, None)
    return [data[i] for i in range(len(data))]


def spans(output, tokenizer):
    """The response split where the mask changes: ``[(mask, text), ...]``."""
    out, start = [], 0
    ids, mask = output.response_ids, output.response_mask
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            out.append((mask[start], tokenizer.decode(ids[start:i], skip_special_tokens=False)))
            start = i
    return out


def test_agent_loop_runs_episodes_from_verl_rows(train_rows, tiny_model, tokenizer):
    import pipelines.train.agent_loop  # noqa: F401  (registers the loop, as agent_loop.yaml makes workers do)

    cfg = composed("dapo", tiny_model, "data.max_prompt_length=2048", "data.max_response_length=4096",
                   "m3agent.overrides=['control.seed_search=false','train.reward.round_cost=0.01']")
    rows = dataset_rows(train_rows, cfg, tokenizer)
    row = next(r for r in rows if r["extra_info"]["question"] == "Who opened the fridge?")
    assert row["agent_name"] == AGENT_NAME and row["reward_model"]["ground_truth"] == "Alice"
    assert row["tools_kwargs"][TOOL_NAME]["create_kwargs"]["memory"] == row["extra_info"]["memory"]

    def policy(call, prompt):
        if call == 1:
            return "Action: [Search]\nContent: who opens the fridge in the kitchen"
        results = prompt.split("Search results for", 1)[1]
        face = results.split("<character_", 1)[1].split(">", 1)[0]  # read the id from the search results
        return f"<think>the notes say so</think>Action: [Answer]\nContent: <character_{face}> opened the fridge."

    server = FakeServer(tokenizer, policy)
    output = run_loop(cfg, tokenizer, server, row)
    assert output.reward_score == pytest.approx(1.0 - 2 * 0.01)  # right; two model rounds
    info = output.extra_fields["reward_extra_info"]
    assert info["correct"] == 1.0 and info["rounds"] == 2.0 and info["ids_left"] == 1.0
    assert output.extra_fields["m3agent_answer"] == "Alice opened the fridge."
    assert output.metrics.generate_sequences >= 0 and output.metrics.tool_calls > 0
    prompt = tokenizer.decode(output.prompt_ids, skip_special_tokens=False)
    assert prompt.startswith("<|im_start|>system\n") and "Round 1 of 5" in prompt and prompt.endswith("assistant\n")
    assert len(output.response_ids) == len(output.response_mask) == len(output.response_logprobs)
    parts = spans(output, tokenizer)
    assert [mask for mask, _ in parts] == [1, 0, 1]  # reply, observation (masked), reply
    assert parts[0][1] == "Action: [Search]\nContent: who opens the fridge in the kitchen<|im_end|>"
    assert "Search results for" in parts[1][1] and "Round 2 of 5" in parts[1][1]
    assert parts[1][1].startswith("\n<|im_start|>user\n") and parts[1][1].endswith("<|im_start|>assistant\n")
    assert parts[2][1].endswith("opened the fridge.<|im_end|>")
    assert all(lp == 0.0 for m, lp in zip(output.response_mask, output.response_logprobs) if m == 0)
    second_prompt = server.calls[1][0]  # what the policy saw in round 2 is the whole conversation so far
    assert second_prompt == prompt + parts[0][1] + parts[1][1]


def test_agent_loop_forces_the_last_round_and_stops_at_the_token_budget(train_rows, tiny_model, tokenizer):
    import pipelines.train.agent_loop  # noqa: F401

    cfg = composed("grpo", tiny_model, "data.max_prompt_length=2048", "data.max_response_length=4096",
                   "m3agent.overrides=['control.max_rounds=3']")
    row = next(r for r in dataset_rows(train_rows, cfg, tokenizer)
               if r["extra_info"]["question"] == "Who plays the guitar?")
    server = FakeServer(tokenizer, lambda call, prompt: "Action: [Search]\nContent: Bob plays guitar")
    output = run_loop(cfg, tokenizer, server, row)
    assert len(server.calls) == 3 and "last round" in server.calls[-1][0]
    assert output.reward_score == 1.0 and output.extra_fields["m3agent_answer"] == "Bob plays guitar"

    tight = composed("grpo", tiny_model, "data.max_prompt_length=2048", "data.max_response_length=400")
    server = FakeServer(tokenizer, lambda call, prompt: "Action: [Search]\nContent: guitar " + "x" * 150)
    output = run_loop(tight, tokenizer, server, row)
    assert output.reward_score == 0.0 and output.extra_fields["reward_extra_info"]["correct"] == 0.0
    assert len(output.response_ids) <= 400 and all(p["max_tokens"] <= 400 for _, p in server.calls)


# ------------------------------------------------------------------------------------------------ reward_fn
def test_reward_fn_scores_decoded_text_with_names(kitchen, train_rows, tiny_model, tokenizer):
    from pipelines.train.reward_fn import compute_score

    cfg = composed("ppo", tiny_model, "m3agent.overrides=['train.reward.id_penalty=0.25']")
    row = next(r for r in dataset_rows(train_rows, cfg, tokenizer)
               if r["extra_info"]["question"] == "Who opened the fridge?")
    transcript = "Action: [Search]\nContent: fridge\nuser\nSearch results...\nassistant\n" \
                 f"Action: [Answer]\nContent: <character_{kitchen.ids['alice_face']}> opened it"
    verl_fn = get_custom_reward_fn(cfg)  # loaded by path, with the trainer config's m3agent settings
    score = verl_fn(row["data_source"], transcript, "Alice", row["extra_info"])
    assert score["score"] == pytest.approx(0.75) and score["correct"] == 1.0 and score["ids_left"] == 1.0
    wrong = compute_score(row["data_source"], "Action: [Answer]\nContent: Bob", "Alice", row["extra_info"])
    assert wrong["score"] == 0.0 and set(wrong) == set(score)


def test_nothing_in_m3agent_imports_verl():
    import subprocess
    import sys

    code = ("import sys, m3agent.cli, m3agent.envs.control, m3agent.train.dataset, m3agent.eval.rewards; "
            "print('verl' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------------------------------------ memory-build
MEMORY_SETTINGS = ["embedder.backend=hashing", "embedder.model=256", "train.memory_build.chunk_records=1"]
FACTS = {"garage": "David keeps his bicycle in the garage.", "Toronto": "Sarah's sister lives in Toronto.",
         "umbrella": "Sarah bought a red umbrella at the market."}
STREAM = ["David says he keeps his bicycle in the garage next to the tools.",
          "It rained all afternoon and the street was quiet for hours.",
          "Sarah mentions that her sister moved to Toronto last year for work.",
          "Sarah came back from the market with a red umbrella."]
HELD_OUT = [{"question": "Where does David keep his bicycle?", "answer": "in the garage"},
            {"question": "Which city does Sarah's sister live in?", "answer": "Toronto"},
            {"question": "What did Sarah buy at the market?", "answer": "a red umbrella"}]


def memory_composed(tiny_model, *overrides):
    settings = ",".join(f"'{item}'" for item in MEMORY_SETTINGS)
    return composed("memory_build", tiny_model, "data.max_prompt_length=2048", f"m3agent.overrides=[{settings}]",
                    *overrides)


def store_the_answers(prompt):
    """A scripted memory-build policy: inserts the fact the newest chunk holds, if any."""
    chunk = prompt.rsplit("New chunk:\n", 1)[1].split("\n\nReply with", 1)[0]
    return "\n".join(json.dumps({"tool": "insert", "kind": "semantic", "text": fact})
                     for word, fact in FACTS.items() if word in chunk) or "Nothing to keep."


def recording(policy):
    """A FakeServer policy from ``policy(prompt)``, and the list of the replies it gave."""
    replies = []

    def play(call, prompt):
        replies.append(policy(prompt))
        return replies[-1]

    return play, replies


def replayed(replies):
    """The reward the memory-build env itself gives the same replies (the rest of the stream unread)."""
    from m3agent.config import load_config
    from m3agent.factory import build_env

    env = build_env(load_config(overrides=MEMORY_SETTINGS), "memory-build")
    env.reset({"id": "neighbours", "chunks": STREAM, "questions": HELD_OUT})
    for reply in replies:
        result = env.step(reply)
    while not result.done:
        result = env.step("")
    return result


@pytest.fixture
def memory_rows(tmp_path):
    """``m3agent train-data --task memory-build`` output for one stream of four chunks."""
    from m3agent.config import load_config
    from m3agent.train.dataset import build_task_dataset, read_tasks

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "neighbours", "chunks": STREAM, "questions": HELD_OUT}) + "\n")
    summary = build_task_dataset(read_tasks(tasks), tmp_path / "memory-data", load_config(overrides=MEMORY_SETTINGS),
                                 data_source="memory-build/tasks", val_fraction=0.0)
    assert summary["train"] == 1 and summary["train_questions"] == 3
    return tmp_path / "memory-data" / "train.parquet"


def test_memory_build_config_composes_on_grpo_and_validates(tiny_model):
    cfg = composed("memory_build", tiny_model)
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    for section in (cfg.algorithm, cfg.actor_rollout_ref.rollout, cfg.actor_rollout_ref.rollout.agent):
        omega_conf_to_dataclass(section)
    grpo = composed("grpo", tiny_model)
    assert cfg.algorithm == grpo.algorithm and not need_critic(cfg) and need_reference_policy(cfg)  # GRPO as grpo.yaml
    keys = ("clip_ratio_low", "clip_ratio_high", "use_kl_loss", "kl_loss_coef", "kl_loss_type", "entropy_coeff")
    assert [cfg.actor_rollout_ref.actor[k] for k in keys] == [grpo.actor_rollout_ref.actor[k] for k in keys]
    assert cfg.actor_rollout_ref.rollout.n == grpo.actor_rollout_ref.rollout.n == 4
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == MEMORY_BUILD_AGENT
    assert cfg.data.max_response_length > grpo.data.max_response_length
    actor = cfg.actor_rollout_ref.actor
    assert actor.ppo_max_token_len_per_gpu >= cfg.data.max_prompt_length + cfg.data.max_response_length
    assert cfg.trainer.experiment_name == "memory-build-grpo" and (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (1, 8)
    assert cfg.data.train_files == "memory-build-data/train.parquet"


def test_launch_script_takes_the_memory_build_config(tmp_path, tiny_model):
    import subprocess

    data, dump = tmp_path / "memory-build-data", tmp_path / "args.txt"
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$DUMP"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "DATA": str(data), "MODEL": str(tiny_model), "DUMP": str(dump)}
    launch = ["bash", str(ROOT / "pipelines" / "train" / "launch.sh"), "memory_build"]
    missing = subprocess.run(launch, env=env, capture_output=True, text=True)
    assert missing.returncode == 2 and "train-data --task memory-build" in missing.stderr
    data.mkdir()
    (data / "train.parquet").write_bytes(b"")
    assert subprocess.run(launch, env=env, capture_output=True).returncode == 0
    args = dump.read_text().splitlines()
    assert args[3] == "--config-name=memory_build"
    with initialize_config_dir(config_dir=str(CONFIGS), version_base=None):
        cfg = compose(config_name="memory_build", overrides=args[4:])
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert cfg.data.train_files == str(data / "train.parquet")


def test_memory_build_loop_runs_an_episode_from_verl_rows(memory_rows, tiny_model, tokenizer, tmp_path, monkeypatch):
    import tempfile

    import pipelines.train.agent_loop  # noqa: F401  (registers the loops, as agent_loop.yaml makes workers do)

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the episode's memory DB goes
    cfg = memory_composed(tiny_model, "data.max_response_length=8192")
    (row,) = dataset_rows(memory_rows, cfg, tokenizer)
    assert row["agent_name"] == MEMORY_BUILD_AGENT and row["extra_info"]["env"] == "memory-build"
    policy, replies = recording(store_the_answers)
    server = FakeServer(tokenizer, policy)
    output = run_loop(cfg, tokenizer, server, row)
    assert len(server.calls) == len(STREAM) and sum(r != "Nothing to keep." for r in replies) == 3
    expected = replayed(replies)
    assert output.reward_score == pytest.approx(expected.reward) and expected.info["accuracy"] == 1.0
    assert 0.8 < output.reward_score < 1.0  # every answer kept, a small memory-size penalty
    info = output.extra_fields["reward_extra_info"]
    assert set(info) == {"score", "accuracy", "size_ratio", "malformed_share", "calls", "failed_calls"}
    assert all(isinstance(v, float) for v in info.values())
    assert (info["accuracy"], info["calls"], info["failed_calls"], info["malformed_share"]) == (1.0, 3.0, 0.0, 0.0)
    assert info["score"] == output.reward_score and info["size_ratio"] == pytest.approx(expected.info["size_ratio"])
    prompt = tokenizer.decode(output.prompt_ids, skip_special_tokens=False)
    assert prompt.startswith("<|im_start|>system\n") and "Chunk 1 of 4." in prompt and STREAM[0] in prompt
    assert "Where does David" not in prompt  # the questions are held out
    parts = spans(output, tokenizer)
    assert [mask for mask, _ in parts] == [1, 0, 1, 0, 1, 0, 1]  # replies trained, observations masked
    assert [text for mask, text in parts if mask == 1] == [reply + "<|im_end|>" for reply in replies]
    for number, (_, observation) in enumerate((p for p in parts if p[0] == 0), start=2):
        assert f"Chunk {number} of 4." in observation and STREAM[number - 1] in observation
    assert "David keeps his bicycle in the garage." in parts[3][1]  # memory stored by reply 1, shown again
    assert server.calls[1][0] == prompt + parts[0][1] + parts[1][1]
    assert all(p["max_tokens"] <= 1024 for _, p in server.calls)  # train.memory_build.max_tokens
    assert not any(path.name.startswith("m3agent-memory-build-") for path in tmp_path.iterdir())


def test_memory_build_loop_out_of_tokens_scores_memory_as_it_stands(memory_rows, tiny_model, tokenizer):
    import pipelines.train.agent_loop  # noqa: F401

    full = memory_composed(tiny_model, "data.max_response_length=8192")
    (row,) = dataset_rows(memory_rows, full, tokenizer)
    probe = run_loop(full, tokenizer, FakeServer(tokenizer, lambda call, prompt: store_the_answers(prompt)), row)
    runs = [len(list(group)) for _, group in itertools.groupby(probe.response_mask)]
    assert len(runs) == 7  # reply, chunk 2, reply, chunk 3, reply, chunk 4, reply
    limit = sum(runs[:5]) + runs[5] // 2  # chunk 4 no longer fits
    tight = memory_composed(tiny_model, f"data.max_response_length={limit}")
    policy, replies = recording(store_the_answers)
    output = run_loop(tight, tokenizer, FakeServer(tokenizer, policy), row)
    assert len(replies) == 3 and len(output.response_ids) <= limit  # chunk 4 went unread
    expected = replayed(replies)
    assert output.reward_score == pytest.approx(expected.reward) and expected.reward < probe.reward_score
    assert output.extra_fields["reward_extra_info"]["accuracy"] == expected.info["accuracy"] == pytest.approx(2 / 3)
