"""Memorize many videos: one memory DB per video, worker processes locally or tasks on a Ray cluster.

Each worker loads the models once and memorizes one video at a time; a video that fails with a
transient error is retried, a bad file (``MediaError``) is reported at once. Everything is
resumable: a finished video is skipped, an interrupted one continues from its last stored clip.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import multiprocessing
import os
import re
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from m3agent.config import Config
from m3agent.errors import M3AgentError
from m3agent.files.jsonl import LineError, file_lines, loads, too_long
from m3agent.files.private import private_dir

log = logging.getLogger(__name__)


@dataclass
class VideoJob:
    video: str
    name: str
    db: str


@dataclass
class JobStatus:
    video: str
    name: str
    db: str
    status: str  # done | skipped | failed
    attempts: int = 0
    clips_done: int = 0
    clips_total: int = 0
    seconds: float = 0.0
    realtime_factor: float = 0.0
    error: str = ""
    note: str = ""  # e.g. the file ends early (truncated): what was readable is memorized


def _safe_name(path: str) -> str:
    stem = Path(path).stem
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem) or "video"


class VideoListError(M3AgentError, ValueError):
    """A video list that cannot be read, or a line of it that names no video (the message names the line)."""


def read_video_list(path: str | os.PathLike[str]) -> list[tuple[str, str | None]]:
    """A text file with one video path per line, or JSON lines ``{"video": ..., "name": ...}`` (read by
    :mod:`m3agent.files.jsonl`: UTF-8 or UTF-16 with a BOM, bounded lines); ``#`` starts a comment line."""
    out = []
    base = Path(path).resolve().parent
    for number, raw in file_lines(path, error=VideoListError, unreadable="cannot read the video list {source}: {reason}",
                                  max_line=100_000):
        line = raw.strip() if raw is not None else None
        if line is not None and (not line or line.startswith("#")):
            continue
        try:
            if line is None:
                raise LineError(too_long(100_000))
            item = loads(line) if line.startswith("{") else {"video": line}
            video, name = item["video"], item.get("name")
            if not isinstance(video, str) or not video.strip() or not isinstance(name, str | None):
                raise TypeError
        except LineError as exc:
            raise VideoListError(f"{path}:{number}: {exc.msg}") from exc
        except (KeyError, TypeError, AttributeError) as exc:
            raise VideoListError(f"{path}:{number}: give a video path, or {{\"video\": PATH, \"name\": NAME}}") from exc
        video_path = Path(video)
        out.append((str(video_path if video_path.is_absolute() else base / video_path), name))
    return out


def plan_jobs(videos: Iterable[tuple[str, str | None]], memory_dir: str | os.PathLike[str]) -> list[VideoJob]:
    memory_dir = Path(memory_dir)
    private_dir(memory_dir)
    jobs, used = [], set()
    for video, name in videos:
        name = name or Path(video).name
        stem = _safe_name(name)
        unique, k = stem, 1
        while unique in used:
            k += 1
            unique = f"{stem}-{k}"
        used.add(unique)
        jobs.append(VideoJob(video, name, str(memory_dir / f"{unique}.db")))
    return jobs


_STACK: dict[str, tuple] = {}


def _stack(config: Config):
    """Models of this process, loaded on first use and kept for the next video."""
    key = json.dumps(dataclasses.asdict(config), sort_keys=True)
    if key not in _STACK:
        from m3agent.factory import memorization_stack

        _STACK.clear()
        _STACK[key] = memorization_stack(config)
    return _STACK[key]


def memorize_job(job: VideoJob, config: Config, retries: int = 1) -> JobStatus:
    """Memorize one video into its DB, retrying transient failures; never raises."""
    from m3agent.factory import open_memory
    from m3agent.media import MediaError
    from m3agent.memorize import memorize_video
    from m3agent.memory.writer import VideoMismatchError

    status = JobStatus(job.video, job.name, job.db, "failed")
    for attempt in range(1, retries + 2):
        status.attempts = attempt
        try:
            perceiver, memorizer, embedder = _stack(config)
            with open_memory(job.db, config, embedder=embedder, create=True) as graph:
                report = memorize_video(job.video, graph, perceiver, memorizer, config.memorize, name=job.name,
                                        log_path=job.db + ".memorize.jsonl", progress=False)
            status.clips_done, status.clips_total = report.clips_done, report.clips_total
            status.seconds, status.realtime_factor = report.seconds, report.realtime_factor
            status.status = "skipped" if report.clips_done == 0 and report.clips_skipped == report.clips_total \
                else "done"
            status.error, status.note = "", report.note
            return status
        except (MediaError, VideoMismatchError) as exc:  # a bad file, or another video's name: retrying won't help
            status.error = str(exc)
            return status
        except Exception as exc:
            status.error = f"{type(exc).__name__}: {exc}"
            log.warning("%s attempt %d failed: %s\n%s", job.name, attempt, exc, traceback.format_exc())
            time.sleep(min(2.0 * attempt, 10.0))
    return status


def run_local(jobs: list[VideoJob], config: Config, workers: int = 1, retries: int = 1,
              on_status: Callable[[JobStatus], None] | None = None) -> list[JobStatus]:
    results: list[JobStatus] = []
    if workers <= 1:
        for job in jobs:
            results.append(memorize_job(job, config, retries))
            if on_status:
                on_status(results[-1])
        return results
    # spawn, not fork: a forked child inherits the parent's model threads and locks and can hang
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(memorize_job, job, config, retries): job for job in jobs}
        for future in as_completed(futures):
            job = futures[future]
            try:
                status = future.result()
            except Exception as exc:  # the worker process itself died
                status = JobStatus(job.video, job.name, job.db, "failed", error=f"worker died: {exc}")
            results.append(status)
            if on_status:
                on_status(status)
    return _in_job_order(results, jobs)


def _in_job_order(results: list[JobStatus], jobs: list[VideoJob]) -> list[JobStatus]:
    order = {job.db: i for i, job in enumerate(jobs)}
    return sorted(results, key=lambda s: order[s.db])


def run_ray(jobs: list[VideoJob], config: Config, address: str | None, retries: int = 1,
            cpus_per_task: float = 2.0, on_status: Callable[[JobStatus], None] | None = None,
            init_kwargs: dict | None = None) -> list[JobStatus]:
    """The same jobs as Ray tasks (``pip install 'm3agent[ray]'``); ``address`` "local" starts Ray here."""
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("Ray is not installed: pip install 'm3agent[ray]'") from exc
    started = False
    if not ray.is_initialized():
        kwargs = dict(init_kwargs or {})
        if address and address != "local":
            kwargs["address"] = address
        ray.init(**kwargs)
        started = True
    try:
        task = ray.remote(num_cpus=cpus_per_task, max_retries=0)(memorize_job)
        refs = {task.remote(job, config, retries): job for job in jobs}
        results = []
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            job = refs[ready[0]]
            try:
                status = ray.get(ready[0])
            except Exception as exc:
                status = JobStatus(job.video, job.name, job.db, "failed", error=f"ray task failed: {exc}")
            results.append(status)
            if on_status:
                on_status(status)
        return _in_job_order(results, jobs)
    finally:
        if started:
            ray.shutdown()


STATUS_FILE = "batch_status.json"


def save_status(results: list[JobStatus], memory_dir: str | os.PathLike[str]) -> list[dict]:
    """Write each video's status to ``MEMORY_DIR/batch_status.json``; returns what it wrote."""
    summary = [dataclasses.asdict(r) for r in results]
    with open(os.path.join(memory_dir, STATUS_FILE), "w") as fh:
        json.dump(summary, fh, indent=1)
    return summary


def summary_table(results: list[JobStatus]) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="memorize-batch")
    for column in ("video", "status", "clips", "tries", "seconds", "x real time", "error or note"):
        table.add_column(column)
    for r in results:
        table.add_row(r.name, r.status, f"{r.clips_done}/{r.clips_total}", str(r.attempts), f"{r.seconds:.1f}",
                      f"{r.realtime_factor:.1f}", (r.error or r.note)[:80])
    buffer = io.StringIO()
    Console(file=buffer, width=140, color_system=None).print(table)
    return buffer.getvalue()
