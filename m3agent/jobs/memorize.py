"""``m3agent memorize``: one video into its memory DB, resuming where an earlier run stopped.

A bad file and a DB another process is writing fail before any model loads; the shipped sample episode is
built first when asked for and missing. Progress events go to a JSON-lines file as the run goes
(:mod:`m3agent.memorize.progress`), per-clip stage timings to ``DB.memorize.jsonl`` unless told otherwise.
"""

from __future__ import annotations

import contextlib
import os

from m3agent.config import Config


class MemorizeInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`memorize_file`: ``saved`` clips of the video are stored, and the same call resumes
    after them."""

    def __init__(self, saved: int):
        super().__init__()
        self.saved = saved


def memorize_file(video: str, memory: str, config: Config, *, name: str | None = None, log: str | None = None,
                  events: str | None = None, progress: bool = True, build_sample: bool = False):
    """Memorize ``video`` into the memory DB ``memory`` (created if missing); returns the
    :class:`~m3agent.memorize.pipeline.MemorizeReport`. ``events`` is the progress-event file, ``log`` the
    stage-timing log, ``progress`` a progress bar on stderr, ``build_sample`` builds the sample episode at
    ``video`` first when it is missing."""
    from m3agent import factory
    from m3agent.media import probe
    from m3agent.memorize import memorize_video
    from m3agent.memorize.pipeline import MemorizationInterrupted
    from m3agent.memorize.progress import EventLog
    from m3agent.memory.store import writing

    event_log = EventLog(events) if events else None
    if build_sample and not os.path.exists(video):
        from m3agent.samples.episode import build_sample_episode

        if event_log:
            event_log({"event": "prepare", "what": "building the sample episode"})
        build_sample_episode(video)
    probe(video)  # a bad file fails here, before any model loads
    with writing(memory):  # and so does a DB another process is writing
        perceiver, memorizer, embedder = factory.memorization_stack(config)
        graph = factory.open_memory(memory, config, embedder=embedder, create=True)
    with graph, contextlib.closing(perceiver), \
            contextlib.closing(event_log) if event_log else contextlib.nullcontext():
        log_path = log or f"{memory}.memorize.jsonl"
        try:
            return memorize_video(video, graph, perceiver, memorizer, config.memorize, name=name, log_path=log_path,
                                  progress=progress, on_event=event_log)
        except MemorizationInterrupted as stop:
            raise MemorizeInterrupted(len(graph.clips(stop.report.video_id))) from None
