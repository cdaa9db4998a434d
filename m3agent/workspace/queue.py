"""Memorizations one at a time, in the background, each in its own process, surviving whoever asked.

The app submits a video; a worker thread runs ``m3agent memorize VIDEO --memory DB --events FILE`` for one
job at a time, so the models of a memorization never share a process (or its GIL) with the chat. The
queue is saved in ``state_dir/jobs.json`` and each run's events in ``state_dir/<job>.events.jsonl``: a
closed browser loses nothing, and a restarted queue puts an unfinished job first again, where the
memorization resumes after its last stored clip. A queue that died without closing (a killed app) leaves
its run going on its own; the next queue waits for that run to end before it resumes the job, so two
memorizations never race for one DB.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from m3agent.files.private import open_private, private_dir
from m3agent.memorize.progress import Progress, read_progress

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"


@dataclass
class MemorizeJob:
    id: str
    video: str
    memory: str
    name: str | None = None
    build_sample: bool = False  # the video is the sample episode, built by the job when missing
    state: str = QUEUED
    error: str | None = None
    submitted: float = field(default_factory=time.time)
    finished: float | None = None
    pid: int | None = None  # the process running it: a queue that died without closing finds it again


@dataclass
class JobStatus:
    """A job as people see it: its state, its place in the queue (1 = next), and its progress."""

    job: MemorizeJob
    position: int | None
    progress: Progress

    def describe(self) -> str:
        video = Path(self.job.video).name
        if self.job.state == QUEUED:
            return f"{video}: queued, position {self.position}"
        if self.job.state == FAILED:
            return f"{video}: failed: {self.job.error}"
        return f"{video}: {self.progress.describe()}"


def memorize_command(cli_args: Sequence[str] = ()) -> Callable[[MemorizeJob, Path], list[str]]:
    """The command a job runs: this Python's ``m3agent memorize``, with the caller's ``--config`` and
    ``--set`` arguments first so that the memorization is configured like the app."""

    def command(job: MemorizeJob, events: Path) -> list[str]:
        argv = [sys.executable, "-m", "m3agent.cli", *cli_args, "memorize", job.video, "--memory", job.memory,
                "--quiet", "--events", str(events)]
        if job.name:
            argv += ["--name", job.name]
        if job.build_sample:
            argv.append("--build-sample")
        return argv

    return command


class MemorizationQueue:
    def __init__(self, state_dir: str | os.PathLike[str],
                 command: Callable[[MemorizeJob, Path], list[str]] | None = None, *, start: bool = True):
        self.state_dir = private_dir(state_dir)
        self._command = command or memorize_command()
        self._lock = threading.Condition()
        self._jobs: list[MemorizeJob] = self._load()
        self._process: subprocess.Popen | None = None
        self._orphan: int | None = None  # an earlier queue's run this one waits for
        self._closing = False
        self._thread: threading.Thread | None = None
        if start:
            self.start()

    # ------------------------------------------------------------------ state on disk
    @property
    def _file(self) -> Path:
        return self.state_dir / "jobs.json"

    def events_path(self, job_id: str) -> Path:
        return self.state_dir / f"{job_id}.events.jsonl"

    def log_path(self, job_id: str) -> Path:
        return self.state_dir / f"{job_id}.log"

    def _load(self) -> list[MemorizeJob]:
        try:
            rows = json.loads(self._file.read_text(encoding="utf-8"))
            jobs = [MemorizeJob(**row) for row in rows]
        except (OSError, ValueError, TypeError):
            return []
        # a job that was running when the queue stopped goes first again: memorization resumes
        interrupted = [j for j in jobs if j.state == RUNNING]
        for job in interrupted:
            job.state = QUEUED
        return interrupted + [j for j in jobs if j not in interrupted]

    def _save(self) -> None:
        temp = self._file.with_suffix(".tmp")
        with open_private(temp, "w", encoding="utf-8") as f:
            json.dump([asdict(j) for j in self._jobs], f, indent=1)
        os.replace(temp, self._file)

    # ------------------------------------------------------------------ asking
    def submit(self, video: str | os.PathLike[str], memory: str | os.PathLike[str], name: str | None = None,
               build_sample: bool = False) -> MemorizeJob:
        """Queue a memorization; the same video into the same memory already waiting or running is not
        queued twice (that job is returned)."""
        video, memory = str(Path(video).resolve()), str(Path(memory).resolve())
        with self._lock:
            for job in self._jobs:
                if job.video == video and job.memory == memory and job.state in (QUEUED, RUNNING):
                    return job
            job = MemorizeJob(uuid.uuid4().hex[:12], video, memory, name, build_sample)
            self._jobs.append(job)
            self._save()
            self._lock.notify_all()
            return job

    def statuses(self) -> list[JobStatus]:
        """Every job, newest last, with its position and progress read from its event file."""
        with self._lock:
            jobs = [MemorizeJob(**asdict(j)) for j in self._jobs]
        position, out = 0, []
        for job in jobs:
            place = None
            if job.state == QUEUED:
                position += 1
                place = position
            out.append(JobStatus(job, place, read_progress(self.events_path(job.id))))
        return out

    def status(self, job_id: str) -> JobStatus:
        for status in self.statuses():
            if status.job.id == job_id:
                return status
        raise KeyError(job_id)

    @property
    def busy(self) -> bool:
        with self._lock:
            return any(j.state in (QUEUED, RUNNING) for j in self._jobs)

    def wait(self, job_id: str, timeout: float | None = None) -> JobStatus:
        """Block until the job is done or failed (or ``timeout`` seconds passed); returns its status."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                job = next(j for j in self._jobs if j.id == job_id)
                left = None if deadline is None else deadline - time.monotonic()
                if job.state in (DONE, FAILED) or (left is not None and left <= 0):
                    break
                self._lock.wait(left if left is not None else 1.0)
        return self.status(job_id)

    # ------------------------------------------------------------------ running
    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._closing = False
            self._thread = threading.Thread(target=self._work, name="m3-memorize-queue", daemon=True)
            self._thread.start()

    def _next(self) -> MemorizeJob | None:
        with self._lock:
            while not self._closing:
                job = next((j for j in self._jobs if j.state == QUEUED), None)
                if job is not None:
                    job.state = RUNNING
                    self._save()
                    return job
                self._lock.wait()
            return None

    def _wait_for_orphan(self, job: MemorizeJob) -> bool:
        """Wait while a run of ``job`` started by an earlier queue still runs; False when closed meanwhile."""
        with self._lock:
            while job.pid is not None and _runs_job(job.pid, job):
                if self._closing:
                    return False
                self._orphan = job.pid
                self._lock.wait(0.5)
            self._orphan = None
            return not self._closing

    def _work(self) -> None:
        while (job := self._next()) is not None:
            events, log = self.events_path(job.id), self.log_path(job.id)
            if not self._wait_for_orphan(job):
                return
            try:
                with open_private(log, "a", encoding="utf-8") as out:
                    with self._lock:
                        if self._closing:  # closed while waiting: the job stays for the next queue
                            return
                        self._process = subprocess.Popen(self._command(job, events), stdout=out, stderr=out,
                                                         stdin=subprocess.DEVNULL, start_new_session=True)
                        job.pid = self._process.pid
                        self._save()
                    code = self._process.wait()
            except OSError as exc:
                code, message = -1, f"cannot start the memorization: {exc}"
            else:
                message = _last_error(log)
            with self._lock:
                self._process = None
                if self._closing and code != 0:  # stopped by close(): it resumes when the queue restarts
                    self._save()
                    self._lock.notify_all()
                    return
                job.state = DONE if code == 0 else FAILED
                job.error = None if code == 0 else (message or f"exit code {code}")
                job.finished = time.time()
                self._save()
                self._lock.notify_all()

    def close(self, timeout: float = 30.0) -> None:
        """Stop taking jobs; a running memorization is interrupted (Ctrl-C: every finished clip is kept)
        and stays marked running, so the next queue on this folder resumes it first."""
        with self._lock:
            self._closing = True
            process, orphan = self._process, self._orphan
            self._lock.notify_all()
        if orphan is not None:
            _interrupt(orphan, timeout)
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
        if self._thread is not None:
            self._thread.join(timeout)


def _runs_job(pid: int, job: MemorizeJob) -> bool:
    """Whether ``pid`` is alive and is a run of ``job`` (its command names the job's memory DB); a pid
    reused by another program, or an ended run, is not."""
    return job.memory.encode() in _cmdline(pid).split(b"\0")


def _interrupt(pid: int, timeout: float) -> None:
    """Ctrl-C to a run this queue did not start (it keeps its finished clips), then wait for it to go."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _cmdline(pid):
        time.sleep(0.05)


def _cmdline(pid: int) -> bytes:
    """A process's NUL-separated command line; empty once it has ended (a zombie has none)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _last_error(log: Path) -> str:
    """The one-line error ``m3agent`` printed last (its CLI prints every error that way)."""
    try:
        lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    for line in reversed(lines):
        if "error:" in line:
            return line.split("error:", 1)[1].strip()
    return lines[-1] if lines else ""
