"""``m3agent demo``: build the sample episode, memorize it, ask about it.

The control model (by default the bundled SmolLM2-135M, which is small and often wrong; see the README for
a served large model) answers each question after searching the memory; each answer is printed with its
evidence clips and the memory line of each clip closest to the question.
"""

from __future__ import annotations

import time
from pathlib import Path

from m3agent.control.evidence import best_evidence
from m3agent.eval.grounding import answer_unfound, unfound_note
from m3agent.files.private import private_dir
from m3agent.samples.episode import QUESTIONS, build_sample_episode


def run_demo(workdir: str | Path, config, questions: list[str] | None = None, out=print) -> dict:
    """Build (once), memorize (resumable) and question the sample episode; returns what it printed."""
    from tqdm import tqdm

    from m3agent import factory
    from m3agent.control import Question
    from m3agent.memorize import memorize_video

    workdir = Path(workdir)
    private_dir(workdir)
    video, db = workdir / "sample_episode.mp4", workdir / "sample_episode.db"
    t0 = time.perf_counter()
    if not video.exists():
        out(f"building the sample episode: {video}")
        build_sample_episode(video)
    out("loading the offline models (faces, voices, speech, text)")
    perceiver, memorizer, embedder = factory.memorization_stack(config)
    graph = factory.open_memory(db, config, embedder=embedder, create=True)
    with perceiver:  # its threads go when the video is memorized
        report = memorize_video(video, graph, perceiver, memorizer, config.memorize, log_path=str(db) + ".log")
    video_row = graph.resolve_video(None)
    names = graph.names(video_row.id)
    out(f"memorized {report.clips_total} clips ({report.realtime_factor:.1f}x real time this run); "
        f"characters: " + ", ".join(f"<character_{c}> = {n}" for c, n in sorted(names.items())))

    chat_config = config.control.chat
    controller = factory.build_controller(graph, config)
    label = chat_config.model or ("SmolLM2-135M-Instruct" if chat_config.backend in ("", "auto") else chat_config.backend)
    out(f"answering with {label} ({factory.chat_backend(chat_config.backend)} backend), up to "
        f"{config.control.max_rounds} rounds of memory search per question")
    asked = questions or QUESTIONS
    with tqdm(total=config.control.max_rounds, unit="round", leave=False) as bar:
        answers = controller.answer_many(
            [Question(q) for q in asked], on_round=lambda number, _: bar.update(1))
    results = []
    for answer in answers:
        missing = f"(no answer: {answer.error})" if answer.error else f"(no answer in {config.control.max_rounds} rounds)"
        out(f"\nQ: {answer.question}\nA: {answer.answer or missing}")
        unfound = answer_unfound(answer)
        if unfound:
            out("   " + unfound_note(unfound))
        elif answer.rounds and answer.rounds[-1].replaced:
            out("   " + answer.rounds[-1].replaced_note())
        searches = [r for r in answer.rounds if r.action == "search"]
        out(f"   {len(answer.rounds) - len(searches)} answer + {len(searches)} searches, {answer.seconds:.1f} s")
        evidence = best_evidence(answer, graph.embed_queries)
        for item in evidence:
            out(f"   evidence: clip {item['clip']} ({item['start']:.0f}-{item['end']:.0f} s): {item['line']}")
        results.append({"question": answer.question, "answer": answer.answer, "error": answer.error,
                        "clips": [item["clip"] for item in evidence], "evidence": evidence,
                        "rounds": answer.to_dict()["rounds"], "seconds": answer.seconds, "unfound": unfound})
    graph.close()
    summary = {"video": str(video), "db": str(db), "seconds": time.perf_counter() - t0, "answers": results}
    out(f"\ndone in {summary['seconds']:.0f} s; memory DB: {db}  (ask more: m3agent ask {db} \"...\")")
    return summary

