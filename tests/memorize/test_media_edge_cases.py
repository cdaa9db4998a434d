"""Memorizing odd files without models: a truncated file is reported as such (and a re-run neither
loops nor crashes), and a streamed WebM without a duration is memorized to its end."""

import json
import subprocess

import pytest

from m3agent.config import MemorizeConfig, PerceptionConfig
from m3agent.memorize import memorize_video
from m3agent.memorize.base import Memorizer, MemoryLines
from m3agent.memory import MemoryGraph
from m3agent.perception.identity import IdentityBank, cosine_distance
from m3agent.perception.pipeline import ClipPerception
from m3agent.samples.damaged import marker_video, streamed_webm, truncated


class _Blind:
    """A perceiver that sees and hears nobody: the pipeline runs without loading a model."""

    def face_bank(self, snapshots):
        return IdentityBank(0.5, cosine_distance, snapshots)

    voice_bank = face_bank

    def face_identity(self):
        return {}

    def close(self):
        pass

    def perceive(self, clip, face_bank, voice_bank, on_stage=None, upcoming=None, voice_faces=None):
        return ClipPerception(clip)


class _Counter(Memorizer):
    name = "counter"

    def describe(self, perception, face_ids, voice_ids):
        clip = perception.clip
        return MemoryLines(episodic=[f"clip {clip.index} from {clip.start:.1f} s to {clip.end:.1f} s"])


CONFIG = MemorizeConfig(perception=PerceptionConfig(clip_seconds=10.0, fps=1.0))


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("odd")
    marker = marker_video(folder / "marker.mp4", seconds=60, marks=(5.0,))
    whole = folder / "whole.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(marker), "-c", "copy", "-movflags", "+faststart",
                    str(whole)], check=True)
    return {"marker": marker, "cut": truncated(whole, folder / "cut.mp4", 0.4),
            "webm": streamed_webm(marker_video(folder / "short.mp4", seconds=25, marks=()), folder / "rec.webm")}


def memorize(path, db, embedder):
    with MemoryGraph.open(db, embedder=embedder) as graph:
        report = memorize_video(path, graph, _Blind(), _Counter(), CONFIG, progress=False)
        clips = [(c.id, c.start, c.end) for c in graph.clips(report.video_id)]
    return report, clips


def test_a_truncated_file_is_reported_and_a_rerun_is_safe(videos, tmp_path, embedder):
    report, clips = memorize(videos["cut"], tmp_path / "cut.db", embedder)
    assert report.truncated and report.clips_total == 6 and 1 < report.clips_done < 6
    assert len(clips) == report.clips_done and clips[-1][2] == pytest.approx(report.ends_at)
    assert report.note == (f"ends at {report.ends_at:.1f} s of 60.0 s (truncated or damaged); "
                           f"memorized {report.clips_done} of 6 clips")
    assert report.to_dict()["note"] == report.note and report.to_dict()["truncated"] is True
    again, clips_again = memorize(videos["cut"], tmp_path / "cut.db", embedder)
    assert again.clips_done == 0 and again.clips_skipped == report.clips_done and clips_again == clips
    assert again.truncated and again.note.endswith(f"memorized {report.clips_done} of 6 clips")
    whole, _ = memorize(videos["marker"], tmp_path / "whole.db", embedder)
    assert not whole.truncated and whole.clips_done == 6 and "note" not in whole.to_dict()


def test_a_streamed_webm_is_memorized_to_its_end(videos, tmp_path, embedder):
    report, clips = memorize(videos["webm"], tmp_path / "webm.db", embedder)
    assert report.clips_done == 3 and report.clips_total == 3 and not report.truncated
    assert [c[0] for c in clips] == [0, 1, 2] and clips[-1][2] == pytest.approx(25, abs=0.1)
    again, _ = memorize(videos["webm"], tmp_path / "webm.db", embedder)
    assert again.clips_done == 0 and again.clips_skipped == 3 and again.clips_total == 3
    with MemoryGraph.open(tmp_path / "webm.db", readonly=True) as graph:
        assert graph.resolve_video(None).duration == pytest.approx(25, abs=0.1)  # learnt from the streams


def test_another_video_with_the_same_file_name_is_not_a_resume(videos, tmp_path, embedder):
    db = tmp_path / "same.db"
    first, first_clips = memorize(videos["marker"], db, embedder)
    other = tmp_path / "other" / videos["marker"].name
    other.parent.mkdir()
    marker_video(other, seconds=25, marks=(3.0,))
    second, second_clips = memorize(other, db, embedder)
    assert second.video_id != first.video_id and second.video == "marker.mp4 (2)"
    assert second.clips_skipped == 0 and second.clips_done == 3  # every clip of it memorized
    with MemoryGraph.open(db, readonly=True) as graph:
        kept = graph.resolve_video("marker.mp4")
        assert kept.path == str(videos["marker"].resolve()) and kept.duration == pytest.approx(60, abs=0.1)
        assert len(graph.clips(kept.id)) == 6  # the first video's memory is as it was
    moved = tmp_path / "moved.mp4"
    moved.write_bytes(videos["marker"].read_bytes())
    again, _ = memorize(moved, db, embedder)  # the same content renamed: a resume with nothing to do
    assert again.video_id == first.video_id and again.clips_done == 0


def test_cli_warns_about_a_truncated_file_and_keeps_its_clips(videos, tmp_path, capsys, monkeypatch, embedder):
    from m3agent import factory
    from m3agent.cli import main

    monkeypatch.setattr(factory, "memorization_stack", lambda config: (_Blind(), _Counter(), embedder))
    video = str(videos["cut"])
    argv = ["--set", "memorize.perception.clip_seconds=10", "memorize", video, "--memory", str(tmp_path / "m.db"),
            "--quiet"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["truncated"] and out["clips_total"] == 6 and 1 < out["clips_done"] < 6
    (line,) = [x for x in captured.err.splitlines() if "warning" in x]
    assert line == (f"m3agent memorize: warning: {video} ends at {out['ends_at']:.1f} s of 60.0 s "
                    f"(truncated or damaged); memorized {out['clips_done']} of 6 clips")


class _Stops(_Counter):
    """Dies after two clips, as a killed run would."""

    def describe(self, perception, face_ids, voice_ids):
        if perception.clip.index == 2:
            raise KeyboardInterrupt
        return super().describe(perception, face_ids, voice_ids)


def test_a_resume_under_another_clip_length_goes_on_in_the_stored_one(videos, tmp_path, embedder):
    db = tmp_path / "resume.db"
    with MemoryGraph.open(db, embedder=embedder) as graph, pytest.raises(KeyboardInterrupt):
        memorize_video(videos["marker"], graph, _Blind(), _Stops(), CONFIG, progress=False)
    thirty = MemorizeConfig(perception=PerceptionConfig(clip_seconds=30.0, fps=1.0))
    with MemoryGraph.open(db, embedder=embedder) as graph:
        report = memorize_video(videos["marker"], graph, _Blind(), _Counter(), thirty, progress=False)
        video = graph.resolve_video(report.video_id)
        spans = [(c.start, c.end) for c in graph.clips(video.id)]
    assert video.clip_seconds == 10.0 and report.clips_skipped == 2 and report.clips_done == 4
    assert spans == [(10.0 * k, 10.0 * k + 10.0) for k in range(6)]
