"""Progress events folded into where a memorization stands."""

import threading

from m3agent.memorize.progress import EventLog, read_progress


def write(path, events):
    log = EventLog(path)
    for event in events:
        log(event)
    log.close()


def test_stages_of_the_clip_in_work_and_the_done_report(tmp_path):
    path = tmp_path / "run.events.jsonl"
    write(path, [{"event": "prepare", "what": "building the sample episode"}])
    assert read_progress(path).describe() == "building the sample episode"
    write(path, [{"event": "start", "video": "v.mp4", "clips_total": 4, "clips_done": 1},
                 {"event": "stage", "clip": 1, "stage": "decode"},
                 {"event": "stage", "clip": 1, "stage": "speech"},
                 {"event": "stage", "clip": 1, "stage": "faces"}])
    progress = read_progress(path)
    assert progress.describe() == "clip 2 of 4: speech + faces" and progress.fraction == 0.25
    write(path, [{"event": "clip", "clip": 1, "clips_done": 2, "clips_total": 4, "realtime_factor": 2.5},
                 {"event": "stage", "clip": 2, "stage": "memorize"}])
    assert read_progress(path).describe() == "clip 3 of 4: memorize, 2.5x real time"
    write(path, [{"event": "done", "clips_total": 4, "clips_done": 3, "clips_skipped": 1, "realtime_factor": 2.4}])
    done = read_progress(path)
    assert done.done and done.fraction == 1.0 and done.describe() == "done: 4 clips, 2.4x real time"


def test_a_resumed_run_starts_over_and_a_torn_line_is_ignored(tmp_path):
    path = tmp_path / "run.events.jsonl"
    write(path, [{"event": "start", "clips_total": 3, "clips_done": 0}, {"event": "done", "clips_done": 3}])
    write(path, [{"event": "start", "clips_total": 3, "clips_done": 2}])
    with path.open("a") as f:
        f.write('{"event": "clip", "clips_do')  # killed mid-write
    progress = read_progress(path)
    assert not progress.done and progress.clips_done == 2 and progress.describe() == "starting (loading models)"
    assert read_progress(tmp_path / "missing.jsonl").fraction == 0.0


def test_two_threads_write_whole_lines(tmp_path):
    path = tmp_path / "run.events.jsonl"
    log = EventLog(path)
    threads = [threading.Thread(target=lambda s=s: [log({"event": "stage", "clip": i, "stage": s}) for i in range(500)])
               for s in ("faces", "speech")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    assert len(path.read_text().splitlines()) == 1000 and read_progress(path).clip == 499
