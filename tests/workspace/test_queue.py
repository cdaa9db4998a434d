"""The memorization queue: one run at a time, positions, failures, and a restart that resumes.

The runs here are real processes that write progress events like ``m3agent memorize --events`` and wait
for a gate file, so the test decides when each one ends; the real memorization through the queue is
in the app's browser test.
"""

import json
import subprocess
import sys
import time
from dataclasses import asdict

import pytest

from m3agent.workspace.queue import (
    DONE,
    FAILED,
    QUEUED,
    RUNNING,
    MemorizationQueue,
    MemorizeJob,
)

RUN = """
import json, os, sys, time
events, gate, video = sys.argv[1], sys.argv[2], sys.argv[3]
with open(events, "a") as f:
    f.write(json.dumps({"event": "start", "video": video, "clips_total": 2, "clips_done": 0}) + "\\n")
    f.write(json.dumps({"event": "stage", "clip": 0, "stage": "faces"}) + "\\n")
while not os.path.exists(gate):
    time.sleep(0.02)
if "bad" in video:
    print("m3agent memorize: error: " + video + " has nothing to memorize", file=sys.stderr)
    sys.exit(2)
with open(events, "a") as f:
    f.write(json.dumps({"event": "done", "clips_total": 2, "clips_done": 2, "clips_skipped": 0}) + "\\n")
"""


@pytest.fixture
def gated(tmp_path):
    def command(job, events):
        return [sys.executable, "-c", RUN, str(events), str(tmp_path / f"{job.video.rsplit('/', 1)[-1]}.gate"),
                job.video, job.memory]

    def open_gate(name):
        (tmp_path / f"{name}.gate").write_text("go")

    return command, open_gate


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_one_run_at_a_time_with_positions_and_progress(tmp_path, gated):
    command, open_gate = gated
    queue = MemorizationQueue(tmp_path / "state", command)
    try:
        a = queue.submit(tmp_path / "a.mp4", tmp_path / "a.db")
        b = queue.submit(tmp_path / "b.mp4", tmp_path / "b.db")
        c = queue.submit(tmp_path / "bad.mp4", tmp_path / "c.db")
        assert queue.submit(tmp_path / "b.mp4", tmp_path / "b.db").id == b.id  # not queued twice
        wait_for(lambda: queue.status(a.id).progress.stages == ["faces"])
        states = {s.job.id: (s.job.state, s.position) for s in queue.statuses()}
        assert states == {a.id: (RUNNING, None), b.id: (QUEUED, 1), c.id: (QUEUED, 2)}
        assert queue.status(a.id).describe() == "a.mp4: clip 1 of 2: faces"
        assert queue.status(c.id).describe() == "bad.mp4: queued, position 2"
        open_gate("a.mp4")
        assert queue.wait(a.id, 20).job.state == DONE
        open_gate("bad.mp4")
        open_gate("b.mp4")
        assert queue.wait(b.id, 20).job.state == DONE
        failed = queue.wait(c.id, 20)
        assert failed.job.state == FAILED and failed.job.error == f"{tmp_path / 'bad.mp4'} has nothing to memorize"
        assert not queue.busy
    finally:
        queue.close()


def test_a_closed_queue_resumes_its_running_job_first(tmp_path, gated):
    command, open_gate = gated
    queue = MemorizationQueue(tmp_path / "state", command)
    a = queue.submit(tmp_path / "a.mp4", tmp_path / "a.db")
    b = queue.submit(tmp_path / "b.mp4", tmp_path / "b.db")
    wait_for(lambda: queue.status(a.id).job.state == RUNNING and queue.status(a.id).progress.clips_total == 2)
    queue.close(timeout=10)  # the run is interrupted; the job stays "running" on disk
    again = MemorizationQueue(tmp_path / "state", command, start=False)
    assert [(s.job.id, s.job.state, s.position) for s in again.statuses()] == [(a.id, QUEUED, 1), (b.id, QUEUED, 2)]
    open_gate("a.mp4")
    open_gate("b.mp4")
    again.start()
    try:
        assert again.wait(a.id, 20).job.state == DONE and again.wait(b.id, 20).job.state == DONE
    finally:
        again.close()


def test_a_run_left_by_a_killed_queue_is_waited_for_not_raced(tmp_path, gated):
    """A killed app leaves its memorization running on its own; the next queue must not start a second
    writer on the same DB while it runs, and resumes the job once it has ended."""
    command, open_gate = gated
    state = tmp_path / "state"
    state.mkdir()
    job = MemorizeJob("orphan", str(tmp_path / "a.mp4"), str(tmp_path / "a.db"), state=RUNNING)
    events = state / "orphan.events.jsonl"
    orphan = subprocess.Popen(command(job, events))
    job.pid = orphan.pid
    (state / "jobs.json").write_text(json.dumps([asdict(job)]))
    queue = MemorizationQueue(state, command)
    try:
        wait_for(lambda: queue.status("orphan").progress.stages == ["faces"])
        time.sleep(0.5)
        assert queue.status("orphan").job.state == RUNNING
        starts = [line for line in events.read_text().splitlines() if '"start"' in line]
        assert len(starts) == 1  # only the orphan runs
        open_gate("a.mp4")
        orphan.wait(20)
        assert queue.wait("orphan", 20).job.state == DONE
        assert queue.status("orphan").job.pid != orphan.pid  # the job's own run resumed it after the orphan
    finally:
        queue.close()
