"""A memorization's progress as JSON lines, and the one rule that reads them back into a state.

``memorize_video(on_event=...)`` emits the events; ``m3agent memorize --events FILE`` writes them with
:class:`EventLog`, and whoever watches the run (the app's queue, a script) folds the file with
:func:`read_progress`. Because the file is the record, a watcher that went away (a closed browser, a
restarted app) reads where the run stands when it comes back.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from m3agent.files.private import open_private

#: the stages a clip goes through, in order (faces, on-screen text and speech overlap, voices follow speech)
STAGES = ("decode", "faces", "text", "speech", "voices", "memorize")


class EventLog:
    """Appends events to a JSON-lines file, flushed each time (it is read while the run goes on).
    Thread-safe: perception reports stages from two threads."""

    def __init__(self, path: str | os.PathLike[str]):
        self._file = open_private(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def __call__(self, event: dict) -> None:
        line = json.dumps(event, ensure_ascii=False) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def close(self) -> None:
        self._file.close()


@dataclass
class Progress:
    """Where a memorization stands: ``clips_done`` of ``clips_total`` (None until known), the clip in
    work and its running stages, the real-time factor so far, and the final report once done."""

    video: str = ""
    clips_total: int | None = None
    clips_done: int = 0
    clip: int | None = None
    stages: list[str] = field(default_factory=list)
    realtime_factor: float = 0.0
    done: bool = False
    report: dict | None = None

    @property
    def fraction(self) -> float:
        if self.done:
            return 1.0
        if not self.clips_total:
            return 0.0
        return min(1.0, self.clips_done / self.clips_total)

    def describe(self) -> str:
        """One line for people: "clip 2 of 4: faces + speech, 1.8x real time"."""
        if self.done:
            report = self.report or {}
            return (f"done: {report.get('clips_done', 0) + report.get('clips_skipped', 0)} clips"
                    + (f", {report['realtime_factor']:.1f}x real time" if report.get("realtime_factor") else ""))
        if self.clip is None:
            return self.stages[0] if self.stages else "starting (loading models)"
        total = f" of {self.clips_total}" if self.clips_total else ""
        stages = " + ".join(self.stages) or "starting"
        speed = f", {self.realtime_factor:.1f}x real time" if self.realtime_factor else ""
        return f"clip {self.clip + 1}{total}: {stages}{speed}"

    def apply(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "prepare":
            self.stages = [str(event.get("what", "preparing"))]
        elif kind == "start":
            self.video = event.get("video", "")
            self.done, self.report, self.clip, self.stages = False, None, None, []  # a resumed run starts over
            self.clips_total = event.get("clips_total")
            self.clips_done = int(event.get("clips_done") or 0)
        elif kind == "stage":
            if event.get("clip") != self.clip:
                self.clip, self.stages = event.get("clip"), []
            stage = event.get("stage")
            if stage == "memorize" or stage == "decode":
                self.stages = [stage]
            elif stage not in self.stages:
                self.stages = [s for s in self.stages if s != "decode"] + [stage]
        elif kind == "clip":
            self.clips_done = int(event.get("clips_done") or 0)
            self.clips_total = event.get("clips_total") or self.clips_total
            self.realtime_factor = float(event.get("realtime_factor") or 0.0)
            self.stages = []
        elif kind == "done":
            self.done, self.report = True, event
            self.clips_total = event.get("clips_total") or self.clips_total
            self.clips_done = int(event.get("clips_done", 0)) + int(event.get("clips_skipped", 0))
            self.realtime_factor = float(event.get("realtime_factor") or self.realtime_factor)
            self.stages = []


def read_progress(path: str | os.PathLike[str]) -> Progress:
    """Fold an event file into a :class:`Progress`; a missing file is a run not started, and a torn
    last line (a run killed mid-write) is ignored."""
    progress = Progress()
    path = Path(path)
    if not path.exists():
        return progress
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                progress.apply(event)
    return progress
