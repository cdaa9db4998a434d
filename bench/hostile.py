"""The hostile user, end to end: odd files, wrong arguments, concurrent commands and interruptions through
the real CLI. Every case must end in what it should do or in a clean one-line error; never a traceback,
never lost data. Prints a table and a summary (``--write FILE`` also writes it as Markdown).

    python -m bench.hostile [--workdir DIR] [--only NAME ...] [--write docs/HOSTILE.md]

It builds the sample episode, memorizes it once with the embedded models, and copies that memory for the
cases that change it. A full run takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from m3agent.samples import damaged  # noqa: E402
from m3agent.samples.episode import PEOPLE, build_sample_episode, photo  # noqa: E402


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.err

    @property
    def clean_error(self) -> bool:
        lines = [ln for ln in self.err.strip().splitlines() if ln.strip()]
        return self.code not in (0, 130) and not self.traceback and bool(lines) and ": error: " in lines[-1]


@dataclass
class Result:
    name: str
    point: str
    expected: str  # "ok" or "error"
    runs: list[Run] = field(default_factory=list)
    behaved: bool = False  # did what the issue asks
    data_lost: bool = False
    note: str = ""

    @property
    def tracebacks(self) -> int:
        return sum(r.traceback for r in self.runs)

    @property
    def security(self) -> bool:
        """A security case that did not hold: someone got in, or saw what they must not."""
        return self.point.endswith(" S") and not self.behaved

    @property
    def clean_errors(self) -> int:
        return sum(r.clean_error for r in self.runs)


class Bench:
    def __init__(self, workdir: Path):
        self.dir = workdir
        self.results: list[Result] = []
        self.env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}

    # ------------------------------------------------------------------ helpers
    def cli(self, *args: str, timeout: float = 600, **kwargs) -> Run:
        proc = subprocess.run([sys.executable, "-m", "m3agent.cli", *map(str, args)], capture_output=True,
                              text=True, timeout=timeout, env=self.env, cwd=self.dir, **kwargs)
        return Run(proc.returncode, proc.stdout, proc.stderr)

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "m3agent.cli", *map(str, args)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env, cwd=self.dir)

    def memorize(self, video: Path, db: Path, *extra: str) -> Run:
        return self.cli("memorize", video, "--memory", db, "--quiet", *extra)

    def fresh_db(self, name: str) -> Path:
        """A path for a new DB in an empty folder (what an earlier run left there is removed)."""
        target = self.dir / name / "memory.db"
        if target.parent.exists():
            shutil.rmtree(target.parent)
        target.parent.mkdir(parents=True)
        return target

    def copy_db(self, name: str) -> Path:
        target = self.fresh_db(name)
        shutil.copy(self.base_db, target)
        return target

    def export(self, db: Path, video: str | None = None) -> dict:
        run = self.cli("export", db, *(["--video", video] if video else []))
        return json.loads(run.out) if run.code == 0 else {}

    def clips(self, db: Path) -> dict[str, int]:
        run = self.cli("inspect", db, "--json")
        return {v["name"]: v["clips"] for v in json.loads(run.out)["videos"]} if run.code == 0 else {}

    # ------------------------------------------------------------------ set-up
    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.episode = self.dir / "a" / "episode.mp4"
        if not self.episode.exists():
            self.episode.parent.mkdir(parents=True, exist_ok=True)
            print("building the sample episode", flush=True)
            build_sample_episode(self.episode)
        self.base_db = self.dir / "base" / "memory.db"
        if not self.base_db.exists():
            print("memorizing it once (the base memory the cases copy)", flush=True)
            run = self.memorize(self.episode, self.base_db)
            if run.code != 0:
                raise SystemExit(f"cannot memorize the sample episode: {run.err}")
        self.other = self.dir / "b" / "episode.mp4"  # the same file name, other content
        if not self.other.exists():
            self.other.parent.mkdir(parents=True, exist_ok=True)
            damaged.marker_video(self.other, seconds=40.0, marks=(5.0, 35.0))

    def run(self, only: list[str] | None = None) -> None:
        for name, point, expected, fn in CASES:
            if only and name not in only:
                continue
            result = Result(name, point, expected)
            started = time.perf_counter()
            try:
                fn(self, result)
            except Exception as exc:  # a case that cannot run is reported, never hidden
                result.note = f"harness: {type(exc).__name__}: {exc}"
                result.behaved = False
            seconds = time.perf_counter() - started
            mark = "ok " if result.behaved and not result.tracebacks and not result.data_lost else "BAD"
            print(f"[{mark}] {name:<32} {seconds:5.1f} s  {result.note}", flush=True)
            self.results.append(result)

    def table(self) -> str:
        rows = ["| case | issue point | expected | exits | behaved | tracebacks | data lost | security | note |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in self.results:
            exits = ",".join(str(run.code) for run in r.runs)
            rows.append(f"| {r.name} | {r.point} | {r.expected} | {exits} | {'yes' if r.behaved else 'NO'} | "
                        f"{r.tracebacks} | {'YES' if r.data_lost else 0} | {'YES' if r.security else 0} | {r.note} |")
        n = len(self.results)
        summary = (f"\n{n} cases, {sum(len(r.runs) for r in self.results)} commands: "
                   f"{sum(r.clean_errors for r in self.results)} clean one-line errors, "
                   f"{sum(r.tracebacks for r in self.results)} tracebacks, "
                   f"{sum(r.data_lost for r in self.results)} cases with data lost, "
                   f"{sum(r.security for r in self.results)} security failures, "
                   f"{sum(not r.behaved for r in self.results)} cases not behaving as the issue asks")
        # the notes quote what the commands said, paths included: written relative to the repository, so the
        # document reads the same whoever ran it where
        return ("\n".join(rows) + "\n" + summary).replace(str(ROOT) + "/", "")


CASES: list[tuple[str, str, str, Callable[[Bench, Result], None]]] = []


def case(name: str, point: str, expected: str = "error"):
    """Register a case: ``expected`` is "ok" (it must work) or "error" (a clean one-line error)."""
    def register(fn: Callable[[Bench, Result], None]):
        CASES.append((name, point, expected, fn))
        return fn
    return register


def expect_error(r: Result, run: Run, *phrases: str) -> None:
    r.runs.append(run)
    text = run.err.lower()
    r.behaved = run.clean_error and all(p.lower() in text for p in phrases)
    if not r.behaved:
        r.note = f"exit {run.code}: {run.err.strip().splitlines()[-1][:140] if run.err.strip() else '(no message)'}"


# ---------------------------------------------------------------------- 1. the same name is not the same video
@case("same-name-other-content", "1", "ok")
def _(b: Bench, r: Result) -> None:
    db = b.copy_db("samename")
    before = b.export(db)
    run = b.memorize(b.other, db)
    r.runs.append(run)
    clips = b.clips(db)
    after = b.export(db, "episode.mp4")
    r.data_lost = after.get("video", {}).get("path") != before.get("video", {}).get("path") or \
        clips.get("episode.mp4") != len(before.get("clips", []))
    r.behaved = run.code == 0 and clips.get("episode.mp4 (2)") == 2
    r.note = f"videos now {clips}"


@case("same-chosen-name-other-content", "1")
def _(b: Bench, r: Result) -> None:
    db = b.copy_db("samename2")
    before = b.clips(db)
    expect_error(r, b.memorize(b.other, db, "--name", "episode.mp4"), "different video")
    r.data_lost = b.clips(db) != before


# ---------------------------------------------------------------------- 2. audio on the video's timeline
@case("joined-file-audio-gaps", "2", "ok")
def _(b: Bench, r: Result) -> None:
    from m3agent.media import iter_clips

    source = b.dir / "marks.mp4"
    damaged.marker_video(source, seconds=120.0, marks=(115.0,))
    joined = damaged.joined_with_audio_gaps(source, b.dir / "joined.mp4", segment_seconds=10.0, audio_gap=0.7)
    tone = None
    for clip in iter_clips(joined, 30.0, 1.0):
        if clip.index == 3:
            loud = np.flatnonzero(np.abs(clip.audio) > 0.3)
            tone = clip.start + loud[0] / 16000 if loud.size else None
    r.runs.append(Run(0, "", ""))
    r.behaved = tone is not None and abs(tone - 115.0) <= 0.1
    r.note = f"tone at {tone:.2f} s, flash at 115.00 s" if tone is not None else "tone not found"


# ---------------------------------------------------------------------- 3. odd containers
@case("webm-without-duration", "3", "ok")
def _(b: Bench, r: Result) -> None:
    webm = damaged.streamed_webm(b.episode, b.dir / "recording.webm")
    db = b.fresh_db("webm")
    run = b.memorize(webm, db)
    r.runs.append(run)
    expected = len(b.export(b.base_db).get("clips", []))
    got = sum(b.clips(db).values())
    r.behaved = run.code == 0 and got == expected
    r.note = f"{got} of {expected} clips"


@case("phone-video-rotated", "3", "ok")
def _(b: Bench, r: Result) -> None:
    face = photo(next(iter(PEOPLE.values()))[2][0])
    video = damaged.rotated(face, b.dir / "portrait.mp4", seconds=4.0)
    db = b.fresh_db("rotated")
    run = b.memorize(video, db)
    r.runs.append(run)
    faces = [n for n in b.export(db).get("nodes", []) if n["kind"] == "face"]
    r.behaved = run.code == 0 and len(faces) >= 1
    r.note = f"{len(faces)} face nodes"


@case("truncated-download", "3", "ok")
def _(b: Bench, r: Result) -> None:
    fast = b.dir / "faststart.mp4"
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", b.episode, "-c", "copy", "-movflags", "+faststart",
                    fast], check=True)
    cut = damaged.truncated(fast, b.dir / "cut.mp4", 0.4)
    db = b.fresh_db("truncated")
    first, again = b.memorize(cut, db), b.memorize(cut, db)
    r.runs += [first, again]
    kept = sum(b.clips(db).values())
    r.behaved = first.code == again.code == 0 and kept > 0 and "truncated" in first.err.lower()
    r.note = f"{kept} clips kept; says: {first.err.strip().splitlines()[-1][:100] if first.err.strip() else '-'}"


@case("not-a-video", "3")
def _(b: Bench, r: Result) -> None:
    junk = b.dir / "junk.mp4"
    junk.write_bytes(os.urandom(50_000))
    expect_error(r, b.memorize(junk, b.fresh_db("junk")))


# ---------------------------------------------------------------------- 4. forget means gone
def _secrets(b: Bench, db: Path) -> tuple[str, int, list[bytes]]:
    data = b.export(db)
    names = data.get("names", {}) or {}
    character, name = next(iter(sorted(names.items())))
    number = int(str(character).removeprefix("character_"))
    members = {int(m.split("_")[1]) for m in data["characters"][f"character_{number}"]}
    lines = [n["text"] for n in data["nodes"] if n["text"] and set(n.get("entities", [])) <= members
             and n.get("entities")]
    return name, number, [name.encode()] + [ln.encode() for ln in lines if len(ln) > 12][:20]


@case("forget-by-name-leaves-nothing", "4", "ok")
def _(b: Bench, r: Result) -> None:
    from m3agent.memory.forgetting import files_beside, find_on_disk

    db = b.copy_db("forget")
    b.cli("search", db, "hello", "--set", "memory.index.ann_threshold=1")  # a vector index cache beside it
    name, _, needles = _secrets(b, db)
    run = b.cli("forget", db, name)
    r.runs.append(run)
    left = find_on_disk(files_beside(db), needles)
    r.behaved = run.code == 0 and not left
    r.data_lost = False
    r.note = f"forgot {name!r}; {len(needles)} pieces searched in {len(files_beside(db))} files, found {len(left)}"


READER = textwrap.dedent("""
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN"); conn.execute("SELECT COUNT(*) FROM nodes").fetchone()
    print("reading", flush=True); time.sleep(60)
""")


@case("forget-while-another-reads", "4")
def _(b: Bench, r: Result) -> None:
    db = b.copy_db("forget-reader")
    name, number, _ = _secrets(b, db)
    reader = subprocess.Popen([sys.executable, "-c", READER, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        reader.stdout.readline()
        with sqlite3.connect(db) as conn:  # a write the reader's snapshot predates
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('touched', '1')")
        expect_error(r, b.cli("forget", db, f"character_{number}", "--wait", "1"), "being read by another process")
    finally:
        reader.kill()
        reader.wait()
    r.data_lost = f"character_{number}" not in b.export(db).get("characters", {})  # nothing half-done


@case("forget-unknown-name", "9")
def _(b: Bench, r: Result) -> None:
    expect_error(r, b.cli("forget", b.base_db, "Nobody Atall"), "character id")


# ---------------------------------------------------------------------- 5. one writer at a time
def _while_memorizing(b: Bench, r: Result, folder: str, *second: str) -> None:
    db = b.fresh_db(folder)
    first = b.start("memorize", b.episode, "--memory", db, "--quiet")
    deadline = time.time() + 120
    lock = Path(f"{db}.lock")
    while time.time() < deadline and not (db.exists() and lock.exists() and lock.stat().st_size):
        time.sleep(0.2)
    run = b.cli(*[str(db) if a == "DB" else a for a in second])
    expect_error(r, run, "being written by another process")
    out, err = first.communicate(timeout=600)
    r.runs.append(Run(first.returncode, out, err))
    expected = len(b.export(b.base_db).get("clips", []))
    r.data_lost = first.returncode != 0 or sum(b.clips(db).values()) != expected


@case("second-memorize", "5")
def _(b: Bench, r: Result) -> None:
    _while_memorizing(b, r, "two-writers", "memorize", str(b.episode), "--memory", "DB", "--quiet")


@case("forget-during-memorize", "5")
def _(b: Bench, r: Result) -> None:
    _while_memorizing(b, r, "forget-writer", "forget", "DB", "character_0")


# ---------------------------------------------------------------------- 6. qa keeps input and finished work
def _questions(b: Bench, n: int = 6) -> Path:
    path = b.dir / "questions.jsonl"
    asks = ["Who likes football?", "What is the name of the woman?", "Where does Peter work?",
            "What did Peter say about his team?", "Who speaks first?", "What is in the kitchen?"]
    path.write_text("".join(json.dumps({"id": f"q{i}", "question": asks[i % len(asks)]}) + "\n" for i in range(n)))
    return path


@case("qa-out-is-the-questions-file", "6")
def _(b: Bench, r: Result) -> None:
    questions = _questions(b)
    before = questions.read_bytes()
    expect_error(r, b.cli("qa", b.base_db, questions, "--out", questions, "--quiet"))
    r.data_lost = questions.read_bytes() != before


@case("qa-out-is-someone-elses-file", "6")
def _(b: Bench, r: Result) -> None:
    notes = b.dir / "notes.txt"
    notes.write_text("my notes\nline two\n")
    expect_error(r, b.cli("qa", b.base_db, _questions(b), "--out", notes, "--quiet"))
    r.data_lost = notes.read_text() != "my notes\nline two\n"


@case("qa-ctrl-c-keeps-answers", "6", "ok")
def _(b: Bench, r: Result) -> None:
    questions = _questions(b, 12)
    out = b.dir / "answers.jsonl"
    out.unlink(missing_ok=True)
    proc = b.start("qa", b.base_db, questions, "--out", out, "--quiet", "--batch", "4")
    deadline = time.time() + 300
    while time.time() < deadline and not (out.exists() and out.read_text().count("\n") >= 1):
        time.sleep(0.2)
    time.sleep(1.0)  # some of the next group are in flight
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    run = Run(proc.returncode, stdout, stderr)
    r.runs.append(run)
    saved = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    rerun = b.cli("qa", b.base_db, questions, "--out", out, "--quiet")
    r.runs.append(rerun)
    final = [json.loads(line) for line in out.read_text().splitlines()]
    r.behaved = run.code == 130 and not run.traceback and rerun.code == 0 and len({a["id"] for a in final}) == 12
    r.data_lost = len(saved) == 0
    r.note = f"{len(saved)} answers saved at Ctrl-C, 12 after the re-run" if r.behaved else f"exit {run.code}"


@case("qa-file-with-bom", "6", "ok")
def _(b: Bench, r: Result) -> None:
    path = b.dir / "bom.txt"
    path.write_bytes("\ufeffWho likes football?\n".encode())
    run = b.cli("qa", b.base_db, path, "--out", b.dir / "bom.answers.jsonl", "--quiet")
    r.runs.append(run)
    r.behaved = run.code == 0


@case("qa-file-latin-1", "6", "ok")
def _(b: Bench, r: Result) -> None:
    path = b.dir / "latin1.txt"
    path.write_bytes("Qui aime le café ?\n".encode("latin-1"))
    run = b.cli("qa", b.base_db, path, "--out", b.dir / "latin1.answers.jsonl", "--quiet")
    r.runs.append(run)
    r.behaved = run.code == 0 or run.clean_error


@case("qa-file-binary", "6")
def _(b: Bench, r: Result) -> None:
    path = b.dir / "binary.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(2000))
    expect_error(r, b.cli("qa", b.base_db, path, "--out", b.dir / "bin.answers.jsonl", "--quiet"))


# ---------------------------------------------------------------------- 7. inputs that silently return nothing
@case("before-clip-beyond-the-end", "7", "ok")
def _(b: Bench, r: Result) -> None:
    plain = b.cli("search", b.base_db, "football", "--json")
    beyond = b.cli("search", b.base_db, "football", "--before-clip", "9999", "--json")
    r.runs += [plain, beyond]
    r.behaved = plain.code == beyond.code == 0 and json.loads(plain.out)["clips"] == json.loads(beyond.out)["clips"]


@case("before-clip-negative", "7")
def _(b: Bench, r: Result) -> None:
    expect_error(r, b.cli("search", b.base_db, "football", "--before-clip", "-1"))


@case("empty-question", "7")
def _(b: Bench, r: Result) -> None:
    expect_error(r, b.cli("ask", b.base_db, "   "))


@case("question-to-an-empty-memory", "7")
def _(b: Bench, r: Result) -> None:
    from m3agent.memory import MemoryGraph

    db = b.fresh_db("empty")
    with MemoryGraph.open(db) as graph:
        graph.add_video("nothing.mp4")
    run = b.cli("ask", db, "Who is there?")
    r.runs.append(run)
    said = (run.out + run.err).lower()
    r.behaved = ("empty" in said or "no clip" in said) and not run.traceback
    if not r.behaved:
        r.note = (run.out + run.err).strip()[:140]


# ---------------------------------------------------------------------- 8. private files, foreign files, checks
@case("memory-files-are-private", "8", "ok")
def _(b: Bench, r: Result) -> None:
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in b.base_db.parent.iterdir()}
    folder = oct(stat.S_IMODE(b.base_db.parent.stat().st_mode))
    r.runs.append(Run(0, "", ""))
    r.behaved = all(m == "0o600" for m in modes.values()) and folder == "0o700"
    r.note = f"folder {folder}; " + ", ".join(f"{k} {v}" for k, v in sorted(modes.items()))


@case("another-apps-sqlite-file", "8")
def _(b: Bench, r: Result) -> None:
    foreign = b.dir / "contacts.db"
    foreign.unlink(missing_ok=True)
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE contacts (name TEXT)")
    before = foreign.read_bytes()
    expect_error(r, b.cli("forget", foreign, "character_0"), "not an m3agent memory")
    r.data_lost = foreign.read_bytes() != before


@case("inspect-check-sees-nan-vectors", "8")
def _(b: Bench, r: Result) -> None:
    db = b.copy_db("nan")
    with sqlite3.connect(db) as conn:
        (dim,) = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
        conn.execute("UPDATE vectors SET vec = ? WHERE node_id = (SELECT MIN(node_id) FROM vectors)",
                     (np.full(int(dim), np.nan, np.float32).tobytes(),))
    run = b.cli("inspect", db, "--check")
    r.runs.append(run)
    r.behaved = run.code == 1 and "nan" in run.out.lower() and not run.traceback


# ---------------------------------------------------------------------- 9. every probe traceback is one line
@case("config-binary-file", "9")
def _(b: Bench, r: Result) -> None:
    path = b.dir / "config.toml"
    path.write_bytes(os.urandom(300))
    expect_error(r, b.cli("--config", path, "inspect", b.base_db))


@case("config-invalid-toml", "9")
def _(b: Bench, r: Result) -> None:
    path = b.dir / "bad.toml"
    path.write_text("[memory\ntop_k = ")
    expect_error(r, b.cli("--config", path, "inspect", b.base_db))


@case("fps-zero", "9")
def _(b: Bench, r: Result) -> None:
    expect_error(r, b.memorize(b.other, b.fresh_db("fps0"), "--set", "memorize.perception.fps=0"), "fps")


@case("clip-seconds-zero", "9")
def _(b: Bench, r: Result) -> None:
    expect_error(r, b.memorize(b.other, b.fresh_db("cs0"), "--set",
                               "memorize.perception.clip_seconds=0"), "clip_seconds")


@case("before-clip-1e400-in-questions", "9")
def _(b: Bench, r: Result) -> None:
    path = b.dir / "inf.jsonl"
    path.write_text('{"question": "Who?", "before_clip": 1e400}\n')
    expect_error(r, b.cli("qa", b.base_db, path, "--out", b.dir / "inf.answers.jsonl", "--quiet"))


def _pickle_case(name: str, payload: Callable[[], bytes]) -> None:
    @case(f"pickle-{name}", "9")
    def _(b: Bench, r: Result) -> None:
        path = b.dir / f"{name}.pkl"
        path.write_bytes(payload())
        db = b.dir / "pickles" / f"{name}.db"
        expect_error(r, b.cli("import-m3", path, db))
        r.data_lost = False


def _evil() -> bytes:
    return b"cos\nsystem\n(S'echo pwned'\ntR."


def _deep() -> bytes:
    """Lists nested 100 000 deep."""
    return b"\x80\x04" + b"(" * 100_000 + b"l" * 100_000 + b"."


def _laughs() -> bytes:
    """40 levels of a list holding the level below ten times: 10**40 elements once expanded."""
    levels = b"".join(b"(" + (b"h" + bytes([i])) * 10 + b"lq" + bytes([i + 1]) for i in range(40))
    return b"\x80\x04]q\x00" + levels + b"."


def _garbage() -> bytes:
    return os.urandom(4096)


for _name, _payload in (("evil-class", _evil), ("deep-nesting", _deep), ("billion-laughs", _laughs),
                        ("random-bytes", _garbage)):
    _pickle_case(_name, _payload)


# ====================================================================== issue 26: the new doors
# (S) security, (D) data lost, (T) tracebacks, (L) limits and consistency. A text source is remembered with the
# hashing embedder where the case is about the door, not about the model.
HASHING = ("--set", "embedder.backend=hashing")
ESCAPES = ("\x1b]0;pwned\x07", "\x1b[2J", "\u202e", "\x9b31m")
RSS_WRAPPER = ("import resource, sys; from m3agent.cli import main; code = main(sys.argv[1:]); "
               "print('maxrss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
               "sys.exit(code)")


def _jsonl(path: Path, rows: list) -> Path:
    """Rows as JSON lines; a str row is written as it is (a line no JSON encoder would write)."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def _text_db(b: Bench, name: str, rows: list, *extra: str) -> tuple[Path, Run]:
    db = b.fresh_db(name)
    run = b.cli(*HASHING, "remember", db, "--source", "chat", "--jsonl", _jsonl(db.parent / "records.jsonl", rows),
                "--quiet", *extra)
    return db, run


def _stored_ids(db: Path, procedural: bool | None = None) -> list[str]:
    """The record ids of a DB's text lines (of one kind, or all)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT meta, kind FROM nodes WHERE meta IS NOT NULL").fetchall()
    from m3agent.memory.model import NodeKind

    out = []
    for meta, kind in rows:
        record = json.loads(meta).get("record")
        if record is not None and (procedural is None or (kind == int(NodeKind.PROCEDURAL)) == procedural):
            out.append(str(record))
    return out


CONVERSATION = [{"id": "c1", "text": "I keep my spare key under the blue flowerpot", "speaker": "Wanda", "session": "1"},
                {"id": "c2", "text": "My brother Ulrich fixes old radios", "speaker": "Wanda", "session": "1"},
                {"id": "c3", "text": "Wanda told me about the flowerpot, I will water it", "speaker": "Tobias",
                 "session": "1"},
                {"id": "c4", "text": "The ferry to Skellig leaves at seven", "speaker": "Tobias", "session": "2"}]


# ---------------------------------------------------------------------- issue 26: whose --out folder it is
def _m3_annotations(path: Path, *references: str) -> Path:
    """Three questions on the base memory (video key "memory": base/memory.db), the same ids in every file."""
    asks = ["Who likes football?", "What is the name of the woman?", "Where does Peter work?"]
    qa = [{"question_id": f"q{i}", "question": q, "answer": a, "type": ["Person Understanding"], "timestamp": "01:00"}
          for i, (q, a) in enumerate(zip(asks, references))]
    path.write_text(json.dumps({"memory": {"video_path": "memory.mp4", "qa_list": qa}}))
    return path


def _bench_m3(b: Bench, annotations: Path, out: Path) -> Run:
    """bench m3 over the base memory, the control model scripted to answer "Peter" (no language model loads)."""
    replies = b.dir / "peter.json"
    replies.write_text(json.dumps(["Action: [Answer]\nContent: Peter."]))
    return b.cli("--set", "control.chat.backend=scripted", "--set", f"control.chat.model={replies}", "--set",
                 "control.seed_search=false", "bench", "m3", "--annotations", annotations, "--memories",
                 b.base_db.parent, "--out", out, "--quiet")


def _build_tasks(b: Bench) -> Path:
    return _jsonl(b.dir / "build-tasks.jsonl", [{"id": "t", "chunks": ["Peter works at the bakery."], "questions": [
        {"question": "Where does Peter work?", "answer": "the bakery"}]}])


def _someones(folder: Path, files: dict[str, bytes]) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()} if folder.is_dir() else {}


@case("bench-m3-out-holds-someones-report", "26 D")
def _(b: Bench, r: Result) -> None:
    files = {"report.md": b"# my report\n", "summary.json": b'{"mine": true}\n', "accuracy_by_type.png": b"png"}
    out = _someones(b.dir / "someones-report", files)
    expect_error(r, _bench_m3(b, _m3_annotations(b.dir / "ann-a.json", "Peter", "Sarah", "the bakery"), out),
                 "choose another --out")
    r.data_lost = _contents(out) != files


@case("bench-m3-rerun-with-other-annotations", "26 D")
def _(b: Bench, r: Result) -> None:
    out = b.dir / "bench-rerun"
    if out.exists():
        shutil.rmtree(out)
    first = _m3_annotations(b.dir / "ann-first.json", "Peter", "Peter", "Peter")  # the scripted answer: 3/3
    run = _bench_m3(b, first, out)
    r.runs.append(run)
    if run.code != 0:
        r.note = f"the first run failed: exit {run.code}: {run.err.strip()[-140:]}"
        return
    report = (out / "report.md").read_bytes()
    second = _m3_annotations(b.dir / "ann-second.json", "David", "Sarah", "Peter")  # a fresh run: 1/3
    expect_error(r, _bench_m3(b, second, out), "annotation questions", "choose another --out")
    again = _bench_m3(b, first, out)  # the same file again: resumed
    r.runs.append(again)
    r.behaved = r.behaved and again.code == 0 and "(3/3)" in again.out
    r.data_lost = (out / "report.md").read_bytes() != report


@case("train-data-out-holds-someones-dataset", "26 D")
def _(b: Bench, r: Result) -> None:
    files = {"train.parquet": b"their rows", "val.parquet": b"their held-out rows", "summary.json": b"{}\n"}
    out = _someones(b.dir / "someones-dataset", files)
    expect_error(r, b.cli(*HASHING, "train-data", "--task", "memory-build", "--tasks", _build_tasks(b), "--out", out),
                 "choose another --out")
    r.data_lost = _contents(out) != files


@case("train-data-out-is-a-file", "26 T")
def _(b: Bench, r: Result) -> None:
    notes = b.dir / "train-notes.txt"
    notes.write_text("my notes\n")
    tasks = _build_tasks(b)
    expect_error(r, b.cli(*HASHING, "train-data", "--task", "memory-build", "--tasks", tasks, "--out", notes),
                 "is a file")
    under = b.cli(*HASHING, "train-data", "--task", "memory-build", "--tasks", tasks, "--out", notes / "out")
    r.runs.append(under)
    r.behaved = r.behaved and under.clean_error and under.code == 2
    r.data_lost = notes.read_text() != "my notes\n"


# ---------------------------------------------------------------------- issue 26: the app serves videos, to itself only
def _app(b: Bench, name: str, *args: str) -> tuple[subprocess.Popen, int, Path]:
    """``m3agent app`` on a free port over a folder holding the episode and a copy of its memory (the DB and
    every file beside it), once it answers; ``args`` go before the subcommand (``--set ...``)."""
    folder = b.dir / name
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "memories").mkdir(parents=True)
    (folder / ".app").mkdir()
    shutil.copy(b.episode, folder / "episode.mp4")
    for part in b.base_db.parent.glob(b.base_db.name + "*"):
        shutil.copy(part, folder / "memories" / part.name.replace(b.base_db.stem, "episode", 1))
    (folder / ".app" / "jobs.json").write_text('{"secret": "the queue of someone"}')
    os.symlink(folder / "memories" / "episode.db", folder / "alias.mp4")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = b.start(*args, "app", "--data", folder, "--port", port)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if _http(port, "/")[0]:
            break
        time.sleep(0.5)
    return proc, port, folder


def _http(port: int, path: str, method: str = "GET", host: str | None = None, **headers: str) -> tuple[int, bytes]:
    """The request exactly as written (no normalizing of ``..`` or ``%``); (0, b"") when nothing answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=b"" if method == "POST" else None,
                     headers={"Host": host or f"127.0.0.1:{port}", **headers})
        response = conn.getresponse()
        return response.status, response.read()
    except OSError:
        return 0, b""
    finally:
        conn.close()


def _stop(r: Result, proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    r.runs.append(Run(proc.returncode, out, err))


@case("app-serves-no-memory-file", "26 S")
def _(b: Bench, r: Result) -> None:
    proc, port, folder = _app(b, "appfiles")
    try:
        secrets = [p for p in sorted((folder / "memories").iterdir()) if p.is_file()] + [folder / ".app" / "jobs.json"]
        before = {p: p.read_bytes() for p in secrets}
        served = []
        for secret in secrets:
            inside = secret.relative_to(folder).as_posix()
            for spelled in (str(secret), os.path.relpath(secret, b.dir), f"{folder}/memories/../{inside}",
                            f"{folder}/memories/%2e%2e/{inside}", f"{folder}/memories/%252e%252e/{inside}",
                            str(secret).replace("/", "%2F"), f"{folder}/alias.mp4"):
                for route in ("/gradio_api/file=", "/gradio_api/file/"):
                    status, body = _http(port, route + spelled)
                    if status in (200, 206) or b"SQLite format 3" in body:
                        served.append(f"{route}{spelled} ({status}, {len(body)} bytes)")
        video_status, video = _http(port, f"/gradio_api/file={folder}/episode.mp4")
        r.behaved = not served and video_status == 200 and video == (folder / "episode.mp4").read_bytes()
        r.data_lost = any(not p.is_file() or p.read_bytes() != data for p, data in before.items()
                          if p.suffix in (".db", ".vec"))
        r.note = (f"SERVED {len(served)}: {served[0]}" if served else
                  f"{len(secrets)} memory/state files refused by every path; the video: {video_status}")
    finally:
        _stop(r, proc)


@case("app-refuses-foreign-host-and-origin", "26 S")
def _(b: Bench, r: Result) -> None:
    proc, port, folder = _app(b, "apphost")
    try:
        video = f"/gradio_api/file={folder}/episode.mp4"
        foreign = {f"{path} Host {host}": _http(port, path, host=host)[0]
                   for path in ("/", "/gradio_api/info", video)
                   for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.nip.io:{port}")}
        foreign["POST from http://evil.example"] = _http(port, "/gradio_api/queue/join", "POST",
                                                         Origin="http://evil.example")[0]
        own = {f"/ Host {host}": _http(port, "/", host=host)[0] for host in (f"127.0.0.1:{port}", f"localhost:{port}")}
        let_in = [k for k, status in foreign.items() if status not in (400, 403)]
        shut_out = [k for k, status in own.items() if status != 200]
        r.behaved = not let_in and not shut_out
        r.note = (f"answered {let_in[:2]}; refused {shut_out}" if let_in or shut_out else
                  f"{len(foreign)} foreign requests refused; 127.0.0.1 and localhost answered")
    finally:
        _stop(r, proc)


@case("app-on-all-interfaces-answers-allowed-names", "26 S", "ok")
def _(b: Bench, r: Result) -> None:
    proc, port, _ = _app(b, "appall", "--set", "app.host=0.0.0.0", "--set", "app.allowed_hosts=box.test")
    try:
        got = {host: _http(port, "/", host=host)[0] for host in (f"box.test:{port}", f"localhost:{port}",
                                                                  f"0.0.0.0:{port}", f"other.test:{port}")}
        r.behaved = got[f"box.test:{port}"] == got[f"localhost:{port}"] == 200 and \
            got[f"0.0.0.0:{port}"] == got[f"other.test:{port}"] == 403
        r.note = ", ".join(f"{h}: {s}" for h, s in got.items())
    finally:
        _stop(r, proc)


@case("escape-sequences-in-memory", "26 S", "ok")
def _(b: Bench, r: Result) -> None:
    rows = [{"id": f"e{i}", "text": f"the kite {e} flew over the pier", "speaker": f"Mal{e}lory", "session": "1"}
            for i, e in enumerate(ESCAPES)]
    db, stored = _text_db(b, "escapes", rows)
    replies = db.parent / "replies.json"
    replies.write_text(json.dumps(["Action: [Answer]\nContent: the kite \x1b[2J\u202e flew"]))
    chat = ("--set", "control.chat.backend=scripted", "--set", f"control.chat.model={replies}")
    r.runs.append(stored)
    for argv in (("search", db, "kite pier", "--threshold", "-1"), ("search", db, "kite", "--lines", "9"),
                 ("search", db, "kite", "--lines", "9", "--json"), ("timeline", db), ("characters", db),
                 (*chat, "ask", db, "What flew?"), ("inspect", db)):
        r.runs.append(b.cli(*HASHING, *argv))
    raw = [run for run in r.runs if any(e[0] in run.out + run.err for e in ESCAPES) or "\x07" in run.out + run.err]
    r.behaved = all(run.code == 0 for run in r.runs) and not raw
    r.note = f"{len(r.runs) - 1} commands printed stored escapes: {len(raw)} raw"


@case("forget-a-text-speaker", "26 S", "ok")
def _(b: Bench, r: Result) -> None:
    from m3agent.memory.forgetting import files_beside, find_on_disk

    db, stored = _text_db(b, "forget-text", CONVERSATION)
    b.cli(*HASHING, "search", db, "spare key", "--set", "memory.index.ann_threshold=1")  # an index cache beside it
    run = b.cli(*HASHING, "forget", db, "Wanda", "--video", "chat")
    r.runs += [stored, run]
    needles = [b"Wanda", b"flowerpot", b"Ulrich", b"spare key"]
    left = find_on_disk(files_beside(db), needles)
    others = b.cli(*HASHING, "search", db, "ferry", "--lines", "3", "--json")
    kept = others.code == 0 and any("Skellig" in line["text"] for line in json.loads(others.out).get("lines", []))
    r.behaved = run.code == 0 and not left and kept
    r.data_lost = not kept
    r.note = f"{len(needles)} pieces searched in {len(files_beside(db))} files, found {len(left)}; other speaker kept: {kept}"


@case("remember-lesson-with-a-record-id", "26 D", "ok")
def _(b: Bench, r: Result) -> None:
    db, first = _text_db(b, "lesson-id", CONVERSATION)
    lessons = _jsonl(db.parent / "lessons.jsonl", [{"id": "c1", "text": "Answer key questions with the hiding place"}])
    run = b.cli(*HASHING, "remember", db, "--source", "chat", "--jsonl", lessons, "--procedural", "--quiet")
    r.runs += [first, run]
    r.behaved = run.code == 0 and _stored_ids(db, procedural=True) == ["c1"]
    r.data_lost = "c1" not in _stored_ids(db, procedural=True)
    r.note = f"lessons stored: {_stored_ids(db, procedural=True)}"


@case("remember-same-id-other-text", "26 D", "ok")
def _(b: Bench, r: Result) -> None:
    db, first = _text_db(b, "changed-id", CONVERSATION)
    edited = _jsonl(db.parent / "edited.jsonl", [{**CONVERSATION[0], "text": "I moved the spare key to the shed"}])
    run = b.cli(*HASHING, "remember", db, "--source", "chat", "--jsonl", edited, "--quiet")
    r.runs += [first, run]
    said = "stored before with other text" in run.err and json.loads(run.out or "{}").get("changed") == 1
    r.behaved = run.code == 0 and said
    r.note = run.err.strip().splitlines()[-1][:140] if run.err.strip() else "(said nothing)"


def _surrogate_case(name: str, argv: Callable[[Bench, Path], list], phrase: str = "lone surrogate") -> None:
    @case(f"lone-surrogate-{name}", "26 T")
    def _(b: Bench, r: Result) -> None:
        folder = b.dir / "surrogate" / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        run = b.cli(*argv(b, folder))
        if name == "remember":  # the valid records around the bad line are kept: it is a skipped line
            r.runs.append(run)
            ids = _stored_ids(folder / "memory.db")
            r.behaved = run.code == 0 and phrase in run.err and sorted(ids) == ["a", "c"]
            r.data_lost = sorted(ids) != ["a", "c"]
            r.note = f"stored {sorted(ids)}; {run.err.strip().splitlines()[0][:100] if run.err.strip() else ''}"
        else:
            expect_error(r, run, phrase)


BAD_LINE = '{"id": "b", "text": "half a pair \\ud800 here", "question": "Who \\ud800?", "query": "x \\udc00"}'
_surrogate_case("remember", lambda b, f: [*HASHING, "remember", f / "memory.db", "--source", "s", "--jsonl", _jsonl(
    f / "r.jsonl", [{"id": "a", "text": "one"}, BAD_LINE, {"id": "c", "text": "three"}]), "--quiet"])
_surrogate_case("qa", lambda b, f: ["qa", b.base_db, _jsonl(f / "q.jsonl", [{"question": "Who?"}, BAD_LINE]),
                                    "--out", f / "answers.jsonl", "--quiet"])
_surrogate_case("bench-m3", lambda b, f: ["bench", "m3", "--annotations", _jsonl(f / "ann.json", [
    '{"episode": {"qa_list": [{"question_id": "x", "question": "Who \\ud800?", "answer": "Bob"}]}}']),
    "--memories", b.base_db.parent, "--out", f / "out", "--quiet"])
_surrogate_case("train-data", lambda b, f: ["train-data", "--task", "memory-build", "--tasks", _jsonl(
    f / "tasks.jsonl", ['{"id": "t", "chunks": [["\\ud800"]], "questions": []}']), "--out", f / "out"])


@case("lone-surrogate-search-queries", "26 T", "ok")
def _(b: Bench, r: Result) -> None:
    path = _jsonl(b.dir / "surrogate-queries.txt", ['{"query": "kitchen \\ud800"}', "football"])
    run = b.cli("search", b.base_db, "--queries", path, "--lines", "2")
    r.runs.append(run)
    rows = [json.loads(line) for line in run.out.splitlines()] if run.code == 0 else []
    r.behaved = len(rows) == 2 and "error" in rows[0] and "lines" in rows[1]
    r.note = f"{len(rows)} result lines; the bad query: {rows[0].get('error', '')[:80] if rows else run.err[-100:]}"


@case("huge-integers", "26 T")
def _(b: Bench, r: Result) -> None:
    for argv, phrase in ((("--lines", str(10**20)), "--lines"), (("--top-k", str(2**70)), "--top-k"),
                         (("--threshold", "inf"), "--threshold"), (("--threshold", "nan"), "--threshold")):
        sub = Result(r.name, r.point, r.expected)
        expect_error(sub, b.cli("search", b.base_db, "football", *argv), phrase)
        r.runs += sub.runs
        if not sub.behaved:
            r.note = sub.note
            return
    r.behaved = True


@case("policy-tool-id-2^70", "26 T", "ok")
def _(b: Bench, r: Result) -> None:
    folder = b.fresh_db("policy-id").parent
    replies = folder / "replies.json"
    replies.write_text(json.dumps([json.dumps({"tool": "delete", "kind": "semantic", "id": 2**70}) + "\n" +
                                   json.dumps({"tool": "insert", "kind": "semantic", "text": "Wanda hides keys"})]))
    run = b.cli(*HASHING, "--set", "control.chat.backend=scripted", "--set", f"control.chat.model={replies}",
                "remember", folder / "memory.db", "--source", "chat", "--jsonl", _jsonl(folder / "r.jsonl", CONVERSATION),
                "--policy", "chat", "--quiet")
    r.runs.append(run)
    r.behaved = run.code == 0
    r.note = (run.out.strip().replace("\n", " ")[:120] if run.code == 0 else run.err.strip()[-140:])


@case("remember-dev-zero", "26 L")
def _(b: Bench, r: Result) -> None:
    started = time.perf_counter()
    run = b.cli(*HASHING, "remember", b.fresh_db("zero"), "--source", "s", "--jsonl", "/dev/zero", "--quiet",
                timeout=60)
    expect_error(r, run, "NUL byte")
    r.note = (r.note or "refused") + f" in {time.perf_counter() - started:.1f} s"


@case("remember-one-endless-line", "26 L", "ok")
def _(b: Bench, r: Result) -> None:
    folder = b.fresh_db("endless").parent
    path = folder / "endless.jsonl"
    with path.open("w") as fh:  # a valid record, 300 MB without a newline, a valid record
        fh.write(json.dumps({"id": "a", "text": "first"}) + "\n")
        block = "x" * 2**20
        for _ in range(300):
            fh.write(block)
        fh.write("\n" + json.dumps({"id": "b", "text": "last"}) + "\n")
    proc = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *HASHING, "remember", folder / "memory.db", "--source",
                           "s", "--jsonl", path, "--quiet"], capture_output=True, text=True, env=b.env, cwd=b.dir)
    path.unlink()
    run = Run(proc.returncode, proc.stdout, proc.stderr)
    r.runs.append(run)
    rss = next((int(w.split()[-1]) // 1024 for w in run.err.splitlines() if w.startswith("maxrss_kb")), None)
    ids = sorted(_stored_ids(folder / "memory.db")) if run.code == 0 else []
    r.behaved = run.code == 0 and "line 2 skipped" in run.err and ids == ["a", "b"] and rss is not None and rss < 1500
    r.data_lost = ids != ["a", "b"]
    r.note = f"stored {ids}; peak RSS {rss} MB for a 300 MB line"


@case("remember-bom-and-utf16", "26 L", "ok")
def _(b: Bench, r: Result) -> None:
    folder = b.fresh_db("encodings").parent
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in CONVERSATION)
    kept = {}
    for name, data in (("bom", b"\xef\xbb\xbf" + text.encode()), ("utf16", text.encode("utf-16"))):
        path = folder / f"{name}.jsonl"
        path.write_bytes(data)
        run = b.cli(*HASHING, "remember", folder / f"{name}.db", "--source", "s", "--jsonl", path, "--quiet")
        r.runs.append(run)
        kept[name] = len(_stored_ids(folder / f"{name}.db")) if run.code == 0 else 0
    r.behaved = all(run.code == 0 for run in r.runs) and set(kept.values()) == {len(CONVERSATION)}
    r.data_lost = not r.behaved
    r.note = f"records stored: {kept} of {len(CONVERSATION)} each"


@case("memorybench-corrupt-corpus", "26 L")
def _(b: Bench, r: Result) -> None:
    from tests.data import MEMORYBENCH

    data = b.dir / "memorybench-corrupt"
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(MEMORYBENCH, data)
    for corpus in (data / "corpus").glob("*.jsonl"):
        corpus.write_bytes(corpus.read_bytes()[: corpus.stat().st_size // 2])  # a download cut in the middle
    expect_error(r, b.cli("bench", "memorybench", "--data", data / "records.jsonl", "--driver", "off-policy",
                          "--out", b.dir / "memorybench-corrupt-out", "--quiet"), "corpus")


@case("remember-200k-records", "26 L", "ok")
def _(b: Bench, r: Result) -> None:
    from m3agent.memory.text_sources import COMMIT_RECORDS

    folder = b.fresh_db("many").parent
    db = folder / "memory.db"
    path = _jsonl(folder / "many.jsonl", [{"id": f"m{i}", "text": f"note number {i} about the harbour",
                                           "session": str(i // 50_000)} for i in range(200_000)])
    proc = subprocess.Popen([sys.executable, "-m", "m3agent.cli", *HASHING, "remember", db, "--source", "s",
                             "--jsonl", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=b.env,
                            cwd=b.dir)
    started, first, seen = time.perf_counter(), None, 0
    while proc.poll() is None and time.perf_counter() - started < 300:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                seen = conn.execute("SELECT count(*) FROM records").fetchone()[0]
        except sqlite3.Error:
            seen = 0
        if seen:
            first = time.perf_counter() - started
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # the worst stop, right after the first commit: no clean-up at all
    _, err = proc.communicate()
    r.runs.append(Run(0, "", ""))
    committed = len(_stored_ids(db)) if db.exists() else 0
    shown = "record" in err and "%" in err
    rerun = b.cli(*HASHING, "remember", db, "--source", "s", "--jsonl", path, "--quiet", timeout=1800)
    r.runs.append(rerun)
    report = json.loads(rerun.out) if rerun.code == 0 else {}
    r.behaved = 0 < committed < 200_000 and committed % COMMIT_RECORDS == 0 and shown and \
        report.get("already_stored") == committed and report.get("added", 0) + committed == 200_000
    r.data_lost = committed == 0 or rerun.code != 0
    r.note = (f"first commit {first:.1f} s after start ({seen} records), killed then: {committed} on disk; progress "
              f"shown: {shown}; the re-run added {report.get('added')}") if first else f"no commit: {err[-120:]}"


LEGEND = ("Issue points 1-9: the first reliability issue. 26 S, D, T, L: the surfaces added since (text memories, "
          "line search, the benchmark harnesses, training data, the memory-building policy, the app), by what a "
          "failure would be: security (someone gets in or sees what they must not), data lost, a traceback, limits "
          "and consistency. `security` counts a security case that did not hold.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default=str(ROOT / "bench" / ".cache" / "hostile"))
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--write", default=None, help="also write the table to this Markdown file")
    args = parser.parse_args()
    bench = Bench(Path(args.workdir).resolve())
    bench.prepare()
    started = time.perf_counter()
    bench.run(args.only)
    table = bench.table()
    print("\n" + table)
    if args.write:
        head = (f"# Hostile cases\n\n`python -m bench.hostile` on {platform.node() or 'this machine'} "
                f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}, {time.perf_counter() - started:.0f} s.\n\n"
                f"{LEGEND}\n\n")
        Path(args.write).write_text(head + table + "\n")
    bad = [r for r in bench.results if r.tracebacks or r.data_lost or r.security]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
