"""Control process: retrieval quality on the fixture episode and answer latency per round per chat backend.

Usage: ``python -m bench.perf_control [--backends scripted llamacpp llamacpp-untrained openai transformers]
[--write docs/BENCHMARKS.md]``.

Builds and memorizes the sample episode (the shipped photos and espeak-ng voices; cached under
``bench/.cache/control``), then
1. retrieval: for each of the 18 fixture questions, is a clip holding the spoken answer among the top-2
   clips one memory search returns? With the defaults, with M3-Agent's 0.5 threshold, with no threshold,
   and without name-to-id query variants;
2. the control loop (5 rounds, seed search) with each backend over the same questions: seconds per model
   round (median and p90), tokens, rounds per question, whether any search reached the evidence clip, and a
   crude answer check (an expected word in the answer). ``openai`` talks to a llama.cpp server started
   here on loopback with the same GGUF, so it measures the HTTP path against ``llamacpp`` in process.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache" / "control"


def memorized_episode(config):
    from m3agent import factory
    from m3agent.memorize import memorize_video
    from m3agent.samples.episode import build_sample_episode
    from m3agent.samples.synth import read_timings

    CACHE.mkdir(parents=True, exist_ok=True)
    video, db = CACHE / "sample_episode.mp4", CACHE / "sample_episode.db"
    if not video.exists():
        build_sample_episode(video)
    perceiver, memorizer, embedder = factory.memorization_stack(config)
    graph = factory.open_memory(db, config, embedder=embedder, create=True)
    memorize_video(video, graph, perceiver, memorizer, config.memorize)
    return graph, read_timings(video)


def retrieval(graph, timings, config) -> dict:
    from m3agent.samples.episode import FIXTURE_QUESTIONS, evidence_clips

    variants = {"default": {}, "M3-Agent threshold 0.5": {"threshold": 0.5}, "no threshold": {"threshold": 0.0}}
    out = {}
    for label, kwargs in {**variants, "no name variants": None}.items():
        if kwargs is None:  # the same search without rewriting names into character ids
            search = dataclasses.replace(config.memory.search, name_variants=False)
            graph.config = dataclasses.replace(graph.config, search=search)
            kwargs = {}
        hits = []
        for q in FIXTURE_QUESTIONS:
            clips = {c.id for c in graph.search(q.question, top_k=2, **kwargs).clips}
            hits.append(bool(clips & evidence_clips(timings, q.line)))
        out[label] = {"hit_rate": sum(hits) / len(hits), "hits": sum(hits), "n": len(hits),
                      "missed": [q.question for q, h in zip(FIXTURE_QUESTIONS, hits) if not h]}
    graph.config = config.memory
    return out


def control(graph, timings, config, backend: str, limit: int | None) -> dict:
    from tqdm import tqdm

    from m3agent.config import ChatConfig
    from m3agent.control import Question
    from m3agent.factory import build_chat, build_controller
    from m3agent.models.bundled import chat_adapter
    from m3agent.models.llm.scripted import ScriptedChat
    from m3agent.samples.episode import FIXTURE_QUESTIONS, evidence_clips
    from m3agent.testing.llama_server import llama_server

    questions = FIXTURE_QUESTIONS[:limit] if limit else FIXTURE_QUESTIONS
    name, untrained = backend.removesuffix("-untrained"), backend.endswith("-untrained")
    chat_config = dataclasses.replace(config.control.chat, backend=name, **({"adapter": ""} if untrained else {}))
    stack = contextlib.ExitStack()
    load = time.perf_counter()
    if backend == "scripted":  # control overhead alone: every round searches, the last one answers
        chat = ScriptedChat(lambda messages: "Action: [Search]\nContent: "
                            + messages[0]["content"].rsplit("Question: ", 1)[-1])
    elif backend == "openai":
        adapter = chat_adapter(chat_config.adapter, chat_config.model, "gguf")
        url = stack.enter_context(llama_server(CACHE / "llama_server.log", adapter=adapter or None))
        chat = build_chat(ChatConfig(backend="openai", base_url=url, concurrency=4))
    else:
        chat = build_chat(chat_config)
    load = time.perf_counter() - load
    with stack:
        controller = build_controller(graph, config, chat)
        answers = []
        for q in tqdm(questions, desc=backend, unit="question"):
            answers.append(controller.answer_many([Question(q.question)])[0])
    rounds = [r for a in answers for r in a.rounds if r.by == "model"]
    per_round = sorted(r.seconds for r in rounds)
    reached = [bool({h["clip"] for h in a.evidence} & evidence_clips(timings, q.line)) for q, a in zip(questions, answers)]
    right = [_has_word(q, a.answer) for q, a in zip(questions, answers)]
    own = [_has_word(q, a.rounds[-1].replaced if a.rounds and a.rounds[-1].replaced else a.answer)
           for q, a in zip(questions, answers)]  # the model's own answer, before any rule gave another
    quoted = sum(1 for a in answers if a.rounds and a.rounds[-1].replaced_by == "quote")
    return {
        "backend": backend, "questions": len(questions), "load_s": round(load, 2),
        "round_s_p50": statistics.median(per_round), "round_s_p90": per_round[int(0.9 * (len(per_round) - 1))],
        "search_ms_p50": 1000 * statistics.median(r.search_seconds for a in answers for r in a.rounds),
        "question_s_p50": statistics.median(a.seconds for a in answers),
        "model_rounds_mean": len(rounds) / len(answers),
        "prompt_tokens_p50": statistics.median(r.prompt_tokens for r in rounds),
        "completion_tokens_p50": statistics.median(r.completion_tokens for r in rounds),
        "evidence_reached": sum(reached) / len(reached), "answer_word_hit": sum(right) / len(right),
        "answer_word_model": sum(own) / len(own), "quoted": quoted,
        "errors": sum(1 for a in answers if a.error),
        "examples": [{"question": a.question, "answer": a.answer} for a in answers[:4]],
    }


DECODE_TOKENS = 96


def decode_rate(model: str, adapter: str = "", tokens: int = DECODE_TOKENS, repeat: int = 5,
                threads: int = 2) -> float:
    """llama.cpp's decoding speed (tokens/s, median of ``repeat``) on the GGUF ``model`` with ``adapter`` applied
    (empty: none): ``tokens`` tokens after a short prompt, EOS never chosen, so every run decodes as many."""
    from llama_cpp import Llama

    llm = Llama(model_path=model, lora_path=adapter or None, n_ctx=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    prompt = llm.tokenize(b"Question: Where are the car keys? Notes: the keys are in the blue bowl.")
    rates = []
    for _ in range(repeat):
        llm.reset()
        llm.eval(prompt)
        start = time.perf_counter()
        for _ in range(tokens):
            scores = llm.scores[llm.n_tokens - 1].copy()
            scores[llm.token_eos()] = -float("inf")
            llm.eval([int(scores.argmax())])
        rates.append(tokens / (time.perf_counter() - start))
    return statistics.median(rates)


def decoding(config) -> dict:
    """Tokens/s of the bundled model bare, with the control adapter applied per token, and with it merged into the
    weights (the llamacpp backend's default, ``control.chat.merge_adapter``)."""
    from m3agent.models.bundled import bundled_chat_gguf, chat_adapter
    from m3agent.models.llm.merged_gguf import merged_model

    adapter = chat_adapter(config.control.chat.adapter, config.control.chat.model, "gguf")
    if not adapter:
        return {}
    base = str(bundled_chat_gguf())
    started = time.perf_counter()
    merged = str(merged_model(base, adapter))
    merge_s = time.perf_counter() - started  # 0 when an earlier run left it in the cache
    without, applied, folded = decode_rate(base), decode_rate(base, adapter), decode_rate(merged)
    return {"adapter": Path(adapter).name, "without_tok_s": round(without, 1), "applied_tok_s": round(applied, 1),
            "merged_tok_s": round(folded, 1), "applied_ratio": round(applied / without, 3),
            "merged_ratio": round(folded / without, 3), "merge_s": round(merge_s, 1),
            "merged_mb": round(Path(merged).stat().st_size / 2**20)}


def _has_word(question, answer: str) -> bool:
    return any(w.lower() in answer.lower() for w in question.answer_words)


def _words(c: dict) -> str:
    """The answer-word cell: the model's own answers, then the answers given when a rule quoted a note for some."""
    if c["backend"] == "scripted":
        return "-"
    own = format(c.get("answer_word_model", c["answer_word_hit"]), ".0%")
    return f"{own} / {c['answer_word_hit']:.0%} ({c['quoted']} quoted)" if c.get("quoted") else own


def render(result: dict) -> str:
    from bench.perf_memory import machine

    r = result["retrieval"]
    rows = "\n".join(f"| {label} | {v['hits']}/{v['n']} = {v['hit_rate']:.0%} | "
                     f"{'; '.join(v['missed']) or '-'} |" for label, v in r.items())
    crows = "\n".join(
        f"| {c['backend']} | {c['questions']} | {c['load_s']:.1f} s | {c['round_s_p50']:.2f} / {c['round_s_p90']:.2f} s "
        f"| {c['question_s_p50']:.1f} s | {c['model_rounds_mean']:.1f} | {c['prompt_tokens_p50']:.0f} / "
        f"{c['completion_tokens_p50']:.0f} | {c['search_ms_p50']:.1f} ms | {c['evidence_reached']:.0%} "
        f"| {_words(c)} | {c['errors']} |"
        for c in result["control"])
    d = result.get("decoding") or {}
    speed = (f"**Decoding with the shipped control adapter** ({DECODE_TOKENS} tokens after a short prompt, median of "
             f"5, 2 threads): {d['without_tok_s']} tokens/s without it; {d['applied_tok_s']} with llama.cpp applying "
             f"`{d['adapter']}` at every token (ratio {d['applied_ratio']:.2f}); {d['merged_tok_s']} with it merged "
             f"into the weights, the default (ratio {d['merged_ratio']:.2f}; the merged copy is {d['merged_mb']} MB, "
             "built once on first use and cached). transformers merges the adapter into the weights when it loads, "
             "so there it costs nothing per token." if d and "merged_tok_s" in d else
             "Decoding with an adapter: not measured (no adapter configured).")
    return f"""Machine: {machine()}. Date: {date.today().isoformat()}. Command: `python -m bench.perf_control --write docs/BENCHMARKS.md`.

The fixture episode is the demo's sample episode (3 people, 10 scenes, 2.2 min, 5 clips), memorized with the
embedded stack. 18 fixture questions (`m3agent/samples/episode.py`), each tied to the script line that holds its answer.

**Retrieval**: is a clip holding the answer among the top-2 clips that one memory search of the question
returns? (Target: at least 90%.)

| search | evidence clip in top 2 | missed |
|---|---|---|
{rows}

The default threshold is the embedder's: 0.25 for the bundled MiniLM (the 99th percentile of its cosine between
real M3-Bench questions and unrelated sentences); M3-Agent's 0.5 was set for OpenAI's text-embedding-3-large and
drops most relevant clips under MiniLM. Name variants search "What will Peter cook" also as "What will
<character_k> cook", so lines that tag Peter's face or voice match. The misses come from speech recognition:
Whisper tiny.en heard "The car keys are in the blue bowl" as "The Carke Marin the Blue Bull".

**Answering** (5 rounds at most, the question searched before round 1, 1,024 tokens per reply at most,
temperature 0). Per model round: seconds (median / p90); tokens (median prompt / completion). "Evidence reached":
some search of the loop returned a clip holding the answer. "Answer word": an expected word appears in the
model's own answer (a crude check that measures the model, not the system); where the control step gave the note
nearest the question for an answer the model mostly invented (`control.quote_invented`), the same check on the
answers given follows, with how many were quoted. `llamacpp` and `openai` run the default control
model, SmolLM2-135M with the adapter `m3agent train control` trained (docs/RESULTS.md); `-untrained` is the same
backend without it.

| backend | questions | load | per round p50 / p90 | per question p50 | model rounds | tokens | search | evidence reached | answer word | errors |
|---|---|---|---|---|---|---|---|---|---|---|
{crows}

{speed}

`scripted` is the control loop's own cost (memory searches, prompt building) with a model that replies at once
and searches every round. "Search" is one memory search including embedding the query with MiniLM (name variants
add a second query to embed).
`openai` is the same GGUF behind llama.cpp's OpenAI-compatible server on loopback, so its gap to `llamacpp` is
the HTTP path. `vllm` needs a GPU and is not measured here; with a served model the per-round cost is the
server's generation time (see the README for serving a large model).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+",
                        default=["scripted", "llamacpp", "llamacpp-untrained", "openai", "transformers"])
    parser.add_argument("--limit", type=int, default=None, help="questions per backend (default: all 18)")
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()

    from m3agent.config import load_config

    config = load_config(None, {}, [])
    graph, timings = memorized_episode(config)
    saved = ROOT / "bench" / "results_control.json"
    earlier = json.loads(saved.read_text())["control"] if saved.exists() else []
    result = {"retrieval": retrieval(graph, timings, config), "control": [], "decoding": decoding(config)}
    print(json.dumps(result["decoding"]))
    print(json.dumps(result["retrieval"], indent=1))
    fresh = {}
    for backend in args.backends:
        fresh[backend] = control(graph, timings, config, backend, args.limit)
        print(json.dumps(fresh[backend], indent=1))
    # backends not run this time keep their earlier rows (same machine assumed: rerun all to compare)
    order = list(dict.fromkeys([c["backend"] for c in earlier] + list(fresh)))
    by_name = {c["backend"]: c for c in earlier} | fresh
    result["control"] = [by_name[name] for name in order]
    saved.write_text(json.dumps(result, indent=1))
    if args.write:
        from bench.markers import replace_block

        replace_block(args.write, "perf_control", render(result))  # notes written around the block stay


if __name__ == "__main__":
    main()
