"""Training the control policy: episodes as token sequences with the environment masked out, gold replies, a
supervised warm start and two GRPO steps through TRL, on a tiny text memory with the bundled model."""

import copy
import json

import pytest

from m3agent import factory
from m3agent.config import load_config
from m3agent.memory.text_sources import TextRecord
from m3agent.train.gold import gold_reply
from m3agent.train.grpo import GrpoSettings, prompt_key, train_grpo
from m3agent.train.policy import LoraSettings, load_base, with_adapter
from m3agent.train.rollouts import ControlRollouts, trl_output
from m3agent.train.sft import IGNORED, WarmStartError, batches, learned_loss, warm_start

pytestmark = pytest.mark.models

RECORDS = [TextRecord("1", "Hello, my name is Ines. I left my umbrella in the red locker.", "00:05", "speaker_1", "0"),
           TextRecord("2", "I am Bruno and I repair boats at the harbour.", "00:20", "speaker_2", "0"),
           TextRecord("3", "Yesterday it rained on the whole valley.", "00:40", "speaker_2", "1"),
           TextRecord("4", "I moved my umbrella from the locker to the car trunk.", "01:10", "speaker_1", "2")]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    config = load_config(overrides=["control.max_rounds=2"])
    graph = factory.open_memory(tmp_path_factory.mktemp("rl") / "w.db", config, create=True)
    graph.remember("world_a", RECORDS)
    tok, model = load_base()
    yield config, graph, tok, model
    graph.close()


def _env_for(config, graph):
    return lambda task: factory.build_env(config, "control", memory=graph)


TASKS = [{"question": "What is Bruno's job?", "answer": "He repairs boats.", "video": "world_a", "evidence": [0]},
         {"question": "Where is Ines's umbrella now?", "answer": "In the car trunk.", "video": "world_a",
          "evidence": [0, 1, 2], "evidence_queries": {"1": "it rained on the whole valley"}}]


def test_an_episode_is_its_conversation_token_for_token_and_only_replies_are_learned(world):
    config, graph, tok, _ = world
    env_for = _env_for(config, graph)
    rollouts = ControlRollouts(tok, env_for)
    seen = []

    def policy(env, task):  # search once, then answer: two replies, one search result between them
        seen.append(env)
        return "Action: [Search]\nContent: umbrella locker" if env.round == 1 else "Action: [Answer]\nContent: Bruno"

    (episode,) = rollouts.replay([TASKS[0]], policy)
    env = seen[-1]
    assert episode.rounds == 2 and len(episode.completion_ids) == len(episode.env_mask)
    whole = tok.decode(episode.prompt_ids + episode.completion_ids)
    assert whole == rollouts.render(env.messages, generation=False).rstrip("\n")  # what inference would see
    learned = tok.decode([t for t, m in zip(episode.completion_ids, episode.env_mask) if m])
    assert learned == "Action: [Search]\nContent: umbrella locker<|im_end|>Action: [Answer]\nContent: Bruno<|im_end|>"
    said = tok.decode([t for t, m in zip(episode.completion_ids, episode.env_mask) if not m])
    assert "Search results for" in said and "locker" in said and "Action: [Search]" not in said
    out = trl_output([episode])
    assert out["env_mask"] == [episode.env_mask] and out["logprobs"] is None and out["env_reward"] == [0.0]
    (ids, mask, labels), = batches([episode], 4, tok.pad_token_id)
    assert [int(t) for t, lab in zip(ids[0], labels[0]) if int(lab) != IGNORED] == \
        [t for t, m in zip(episode.completion_ids, episode.env_mask) if m]  # the loss sees the replies only


def test_gold_replies_answer_once_the_evidence_is_shown_and_search_for_what_is_missing(world):
    config, graph, tok, _ = world
    episodes = ControlRollouts(tok, _env_for(config, graph)).replay(TASKS, gold_reply)
    assert [e.right for e in episodes] == [True, True] and [e.reward for e in episodes] == [1.0, 1.0]
    assert [e.rounds for e in episodes] == [1, 2]  # clip 1 is not among what the question's own search found
    assert "Content: it rained on the whole valley" in tok.decode(episodes[1].completion_ids)


def test_gold_answers_a_total_with_its_working_which_the_reward_judges_right(world):
    config, graph, tok, _ = world
    total = {"question": "How many umbrellas does Ines have?", "answer": "Seven.", "worked": "4 + 3 = 7 umbrellas.",
             "video": "world_a", "evidence": [0]}
    (episode,) = ControlRollouts(tok, _env_for(config, graph)).replay([total], gold_reply)
    assert "Content: 4 + 3 = 7 umbrellas." in tok.decode(episode.completion_ids) and episode.right


def test_gold_answers_who_said_from_notes_that_show_the_speaker_by_name_once_memory_knows_it(tmp_path, world):
    _, _, tok, _ = world
    config = load_config(overrides=["control.max_rounds=3", "memory.search.top_k=1"])  # one clip a search
    records = [TextRecord("a", 'At 00:05 <character_4> says: "I sell kites on the pier."', session="0"),
               TextRecord("b", 'At 00:35 <character_4> says: "Hello, my name is Ines."', session="1"),
               TextRecord("b/n", "<character_4>'s name is Ines", session="1")]
    graph = factory.open_memory(tmp_path / "ids.db", config, create=True)
    graph.remember("world_ids", records)
    try:
        env_for = _env_for(config, graph)
        later = {"question": "Who sells kites on the pier?", "answer": "Ines.", "video": "world_ids", "evidence": [0]}
        before = dict(later, before_clip=0, answer="<character_4>")  # asked before anyone said the name
        shown = [env_for(t).reset(t)[-1]["content"] for t in (later, before)]
        episodes = ControlRollouts(tok, env_for).replay([later], gold_reply)
    finally:
        graph.close()
    assert 'Ines says: "I sell kites' in shown[0] and "<character_4>" not in shown[0].split("Round 1")[0]
    assert '<character_4> says: "I sell kites' in shown[1] and "Ines" not in shown[1]
    assert episodes[0].right and episodes[0].rounds == 1


def test_gold_answers_a_question_the_user_corrected_at_once_with_the_correction(world):
    config, graph, tok, _ = world
    from m3agent.train.clip_order import shown_in_order

    task = dict(TASKS[1], corrected=True, hidden=[0, 1, 2], lessons=[
        'Asked "Where is Ines\'s umbrella now?", the answer "In the red locker." was wrong; the user corrected it: '
        '"In the car trunk.".'])
    env_for = lambda t: factory.build_env(config, "control", memory=shown_in_order(graph, "search", 0, t["hidden"]))  # noqa: E731
    (episode,) = ControlRollouts(tok, env_for).replay([task], gold_reply)
    assert episode.rounds == 1 and episode.right and "Content: In the car trunk." in tok.decode(episode.completion_ids)
    moved = "umbrella from the locker to the car trunk"  # the evidence line, which the notes would show
    assert moved in "\n".join(m["content"] for m in _env_for(config, graph)(task).reset(task))
    shown = tok.decode(episode.prompt_ids)
    assert "the user corrected it" in shown and moved not in shown


@pytest.mark.slow
def test_a_warm_start_then_two_grpo_steps_train_the_adapter_and_log_each_step(world, tmp_path):
    config, graph, tok, base = world
    env_for = _env_for(config, graph)
    model = with_adapter(base, LoraSettings(rank=4, alpha=8, targets=("q_proj", "v_proj")))
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    gold = ControlRollouts(tok, env_for).replay(TASKS, gold_reply)
    losses = warm_start(model, gold, pad=tok.pad_token_id, epochs=2, batch_size=2, learning_rate=1e-3)
    assert len(losses) == 2 and losses[-1] < losses[0]
    assert any(not p.equal(before[n]) for n, p in model.named_parameters() if p.requires_grad)
    tasks = [dict(t, prompt=env_for(t).reset(t)) for t in TASKS]
    assert len({prompt_key(t["prompt"]) for t in tasks}) == 2
    settings = GrpoSettings(steps=2, prompts_per_step=1, generations=2, max_new_tokens=16, save_every=1, resample=1)
    train_grpo(model, tok, tasks, env_for, tmp_path, settings)
    steps = [json.loads(line) for line in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert [s["step"] for s in steps] == [1, 2] and all(s["episodes"] == 2 and s["groups"] == 1 for s in steps)
    assert all(s["redrawn"] == (0 if s["spread_drawn"] else 1) for s in steps)  # a flat group is drawn again, once
    assert (tmp_path / "checkpoint-2" / "adapter_config.json").exists()


def test_the_warm_start_loss_on_learned_positions_alone_is_the_full_causal_loss(world):
    config, graph, tok, model = world
    rollouts = ControlRollouts(tok, _env_for(config, graph)).replay(TASKS, gold_reply)
    ids, mask, labels = next(batches(rollouts, 2, tok.pad_token_id))
    import torch

    was_training = model.training
    model.eval()  # earlier tests may leave it training: dropout would make the two passes differ
    try:
        with torch.no_grad():
            full = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            fast = learned_loss(model, ids, mask, labels)
    finally:
        model.train(was_training)
    assert torch.allclose(full, fast, rtol=1e-4, atol=1e-5)


def test_the_warm_start_recomputing_activations_learns_the_same_weights(world):
    config, graph, tok, _ = world
    import torch

    gold = ControlRollouts(tok, _env_for(config, graph)).replay(TASKS, gold_reply)
    learned = []
    for checkpointing in (False, True):
        torch.manual_seed(3)  # the same new adapter both times; no dropout, so the passes differ only in memory
        model = with_adapter(load_base()[1], LoraSettings(rank=4, alpha=8, dropout=0.0, targets=("q_proj", "v_proj")))
        losses = warm_start(model, gold, pad=tok.pad_token_id, batch_size=2, learning_rate=1e-3,
                            checkpointing=checkpointing)
        named = "activation" if hasattr(model, "activation_checkpointing_enable") else "gradient"  # transformers 5: activation
        assert not getattr(model, f"is_{named}_checkpointing")  # GRPO after it runs as it did
        learned.append((losses, {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}))
    (plain, plain_weights), (recomputed, recomputed_weights) = learned
    assert recomputed == pytest.approx(plain, rel=1e-5)
    assert all(torch.allclose(recomputed_weights[n], w, atol=1e-6) for n, w in plain_weights.items())


class Stopped(Exception):
    pass


def test_a_stopped_warm_start_goes_on_where_it_was_saved(world, tmp_path):
    config, graph, tok, _ = world
    import torch

    gold = ControlRollouts(tok, _env_for(config, graph)).replay(TASKS, gold_reply)
    lora = LoraSettings(rank=4, alpha=8, dropout=0.1, targets=("q_proj", "v_proj"))  # dropout: the random state counts
    steps = dict(pad=tok.pad_token_id, epochs=2, batch_size=1, learning_rate=1e-3)

    base = load_base()[1]

    def fresh():  # the same new adapter on a copy of the base (loading the base again would take longer)
        torch.manual_seed(3)
        return with_adapter(copy.deepcopy(base), lora)

    def trainable(model):
        return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}

    unbroken = fresh()
    whole = warm_start(unbroken, gold, **steps)
    assert len(whole) == 4

    progress = tmp_path / "progress.pt"

    def stop_at_three(number, loss):
        if number == 3:
            raise Stopped

    with pytest.raises(Stopped):  # saved after step 2; step 3 is lost with the stop
        warm_start(fresh(), gold, progress=progress, save_every=2, on_step=stop_at_three, **steps)
    seen = []
    model = fresh()
    torch.manual_seed(11)  # another random state at the restart: the saved one must be what counts
    losses = warm_start(model, gold, progress=progress, save_every=2, on_step=lambda n, _: seen.append(n), **steps)
    assert seen == [3, 4] and losses == pytest.approx(whole, rel=1e-5)
    assert all(torch.allclose(w, trainable(unbroken)[n], atol=1e-6) for n, w in trainable(model).items())

    with pytest.raises(WarmStartError, match="another warm start"):  # other batches: the saved state does not fit
        warm_start(model, gold, progress=progress, **dict(steps, batch_size=2))
