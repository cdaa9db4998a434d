"""Batch memorization: local worker processes and Ray (local cluster on loopback)."""

import json
import os
import subprocess

import pytest

from m3agent.config import load_config
from m3agent.jobs.batch import plan_jobs, read_video_list, run_local, run_ray
from m3agent.memory import MemoryGraph

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def video_list(episode_video, tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    short = root / "a.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(episode_video[0]), "-t", "8", "-c", "copy",
                    str(short)], check=True)
    bad = root / "broken.mp4"
    bad.write_bytes(b"\x00" * 1000)
    listing = root / "videos.txt"
    listing.write_text(f"# two videos and a broken file\n{short}\n{{\"video\": \"a.mp4\", \"name\": \"again\"}}\n"
                       "broken.mp4\n")
    return listing


def test_read_list_and_plan(video_list, tmp_path):
    videos = read_video_list(video_list)
    assert [n for _, n in videos] == [None, "again", None]
    jobs = plan_jobs(videos, tmp_path / "dbs")
    assert [os.path.basename(j.db) for j in jobs] == ["a.db", "again.db", "broken.db"]


def test_local_workers_statuses_retries_and_resume(video_list, tmp_path, capsys):
    from m3agent.cli import main

    out_dir = tmp_path / "dbs"
    code = main(["memorize-batch", str(video_list), "--memory-dir", str(out_dir), "--workers", "2", "--quiet"])
    assert code == 1  # one input is broken
    table = capsys.readouterr().out
    assert "done" in table and "failed" in table
    status = {s["name"]: s for s in json.loads((out_dir / "batch_status.json").read_text())}
    assert status["a.mp4"]["status"] == "done" and status["again"]["status"] == "done"
    assert status["broken.mp4"]["status"] == "failed" and status["broken.mp4"]["attempts"] == 1
    assert "not a readable video" in status["broken.mp4"]["error"]
    with MemoryGraph.open(out_dir / "a.db") as graph:
        assert len(graph.store.clips(1)) == 1
    jobs = plan_jobs(read_video_list(video_list), out_dir)[:1]
    again = run_local(jobs, load_config(), workers=1)
    assert again[0].status == "skipped"


def test_ray_local_cluster(video_list, tmp_path):
    pytest.importorskip("ray", reason="ray is an optional extra (pip install 'm3agent[ray]')")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    jobs = plan_jobs(read_video_list(video_list), tmp_path / "ray")
    results = run_ray(jobs, load_config(), "local", retries=0, cpus_per_task=1,
                      init_kwargs={"num_cpus": 2, "include_dashboard": False, "_node_ip_address": "127.0.0.1"})
    assert [r.status for r in results] == ["done", "done", "failed"]
