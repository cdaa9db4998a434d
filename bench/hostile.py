"""The hostile user, end to end: odd files, wrong arguments, concurrent commands and interruptions through
the real CLI. Every case must end in what it should do or in a clean one-line error; never a traceback,
never lost data. Prints a table and a summary (``--write FILE`` also writes it as Markdown).

    python bench/hostile.py [--workdir DIR] [--only NAME ...] [--write docs/HOSTILE.md]

It builds the sample episode, memorizes it once with the embedded models, and copies that memory for the
cases that change it. A full run takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
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
sys.path.insert(0, str(ROOT))

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
        rows = ["| case | issue point | expected | exits | behaved | tracebacks | data lost | note |",
                "|---|---|---|---|---|---|---|---|"]
        for r in self.results:
            exits = ",".join(str(run.code) for run in r.runs)
            rows.append(f"| {r.name} | {r.point} | {r.expected} | {exits} | {'yes' if r.behaved else 'NO'} | "
                        f"{r.tracebacks} | {'YES' if r.data_lost else 0} | {r.note} |")
        n = len(self.results)
        summary = (f"\n{n} cases, {sum(len(r.runs) for r in self.results)} commands: "
                   f"{sum(r.clean_errors for r in self.results)} clean one-line errors, "
                   f"{sum(r.tracebacks for r in self.results)} tracebacks, "
                   f"{sum(r.data_lost for r in self.results)} cases with data lost, "
                   f"{sum(not r.behaved for r in self.results)} cases not behaving as the issue asks")
        return "\n".join(rows) + "\n" + summary


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
        head = (f"# Hostile cases\n\n`python bench/hostile.py` on {platform.node() or 'this machine'} "
                f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}, {time.perf_counter() - started:.0f} s.\n\n")
        Path(args.write).write_text(head + table + "\n")
    bad = [r for r in bench.results if r.tracebacks or r.data_lost]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
