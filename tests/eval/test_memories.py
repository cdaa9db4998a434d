"""Finding each benchmark video's memory: our DB, an M3-Agent pickle, a video to memorize, or a reason."""

from m3agent.eval.memories import plan_memory


def test_lookup_order_and_reasons(tmp_path):
    memories, converted, videos = tmp_path / "mem", tmp_path / "out" / "converted", tmp_path / "videos"
    memories.mkdir()
    videos.mkdir()
    missing = plan_memory("v1", memories, converted, mem_path="data/memory_graphs/robot/g1.pkl")
    assert not missing.found and "looked for v1.db, g1.pkl, v1.pkl" in missing.problem and "--videos" in missing.problem

    (memories / "g1.pkl").write_bytes(b"x")
    plan = plan_memory("v1", memories, converted, mem_path="data/memory_graphs/robot/g1.pkl")
    assert plan.pickle == memories / "g1.pkl" and plan.db == converted / "v1.db"

    (memories / "v1.db").write_bytes(b"x")
    assert plan_memory("v1", memories, converted).db == memories / "v1.db"

    none = plan_memory("v2", memories, converted, video_path="data/videos/robot/v2.mp4", videos=videos)
    assert "no video file in" in none.problem and "v2.mp4" in none.problem
    (videos / "v2.webm").write_bytes(b"x")
    plan = plan_memory("v2", memories, converted, video_path="data/videos/robot/v2.mp4", videos=videos)
    assert plan.video_file == videos / "v2.webm" and plan.db == memories / "v2.db" and plan.found


def test_a_video_key_cannot_leave_the_folder(tmp_path):
    plan = plan_memory("../../etc/passwd", tmp_path, tmp_path / "c")
    assert "looked for _.._etc_passwd.db" in plan.problem
