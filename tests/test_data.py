"""The repository carries its own test data: every file in tests/data is documented (source and license in
tests/data/README.md), the expected files are all there, and no code reaches outside the repository for data."""

import json
import re
from pathlib import Path

from tests.data import DATA, FACES, FACES_MORE, M3BENCH, SPEECH, VIDEO_CLIP

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("m3agent", "tests", "bench", ".ci")
SKIPPED_DIRS = {"__pycache__", ".cache", ".pytest_cache", ".ruff_cache"}


def documented_paths() -> list[str]:
    """The first column of the table in tests/data/README.md, cut before any wildcard (``<speaker>``, ``*``)."""
    rows = re.findall(r"^\|\s*`([^`]+)`", (DATA / "README.md").read_text(), re.M)
    return [re.split(r"[<*]", row, maxsplit=1)[0] for row in rows]


def test_every_data_file_is_documented():
    documented = documented_paths()
    assert {"faces/", "faces_more/", "video/", "m3bench/", "speech/"} <= {p.split("/")[0] + "/" for p in documented}
    files = [p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file()]
    undocumented = [f for f in files
                    if f != "README.md" and not f.startswith("LICENSES/")
                    and not any(f == d or (d.endswith("/") and f.startswith(d)) for d in documented)]
    assert not undocumented, f"files in tests/data missing from its README: {undocumented}"
    assert (DATA / "LICENSES").is_dir() and any((DATA / "LICENSES").iterdir())


def test_expected_data_is_present():
    assert len(list(FACES.glob("*.jpg"))) + len(list(FACES.glob("*.png"))) >= 10
    assert (FACES_MORE / "astronaut.png").is_file() and (FACES_MORE / "t1.jpg").is_file()
    assert VIDEO_CLIP.is_file() and VIDEO_CLIP.stat().st_size > 100_000
    speakers = sorted(p for p in (SPEECH / "librispeech_test-other").iterdir() if p.is_dir())
    assert len(speakers) == 6
    assert all(len(list(s.glob("*.flac"))) == 10 for s in speakers)
    assert all(f.name.startswith(s.name + "-") for s in speakers for f in s.glob("*.flac"))  # speaker id = folder
    assert (SPEECH / "interview_X2zqiX6yL3I.mp3").is_file()
    robot = json.loads((M3BENCH / "robot.json").read_text())
    web = json.loads((M3BENCH / "web.json").read_text())
    assert len(robot) == 100 and len(web) == 920
    assert all("qa_list" in video for video in [*robot.values(), *web.values()])


def test_nothing_reads_data_outside_the_repository():
    needles = [b"shared" + b"/data", b".." + b"/shared"]  # built from pieces so this file does not match
    offenders = []
    for top in SCANNED:
        for path in (ROOT / top).rglob("*"):
            rel = path.relative_to(ROOT)
            if (not path.is_file() or SKIPPED_DIRS.intersection(rel.parts)
                    or rel.parts[:2] == ("tests", "data")):
                continue
            content = path.read_bytes()
            if b"\0" in content[:8192]:  # binary
                continue
            offenders += [f"{rel.as_posix()}: {n.decode()}" for n in needles if n in content]
    assert not offenders, offenders
