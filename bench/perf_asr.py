"""Speech recognition on speech whose words are known: the word error rate and time of the ASR backend, per beam size.

Usage: ``python -m bench.perf_asr [--beams 1 5] [--write docs/BENCHMARKS.md]``.

The speech is the espeak-ng speech of the mini M3-Bench's videos and of the sample episode (``m3agent demo``), built
by the repository's own tools (``bench/.cache/m3mini/videos`` is reused when there): each scene's line is known.
Each 30-second clip is transcribed as memorization does it (two clips a pass, ``transcribe_many``) and compared with
the lines of the scenes that start in it. Word errors are substitutions, insertions and deletions over the
reference's words, after lower-casing, dropping punctuation and writing number words up to twenty as digits.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from datetime import date
from pathlib import Path

CLIP_SECONDS = 30.0
NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                "sixteen seventeen eighteen nineteen twenty").split()


def words(text: str) -> list[str]:
    tokens = re.sub(r"[^a-z0-9' ]", " ", text.lower().replace("-", " ")).split()
    return [str(NUMBER_WORDS.index(t)) if t in NUMBER_WORDS else t for t in tokens]


def word_errors(reference: list[str], heard: list[str]) -> int:
    """The edit distance between two word lists (substitutions, insertions, deletions)."""
    row = list(range(len(heard) + 1))
    for i, ref in enumerate(reference, 1):
        diagonal, row[0] = row[0], i
        for j, word in enumerate(heard, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (ref != word))
    return row[-1]


def episodes(work: Path) -> list[Path]:
    """The videos with known lines: the mini M3-Bench's (built once into its cache) and the sample episode."""
    from bench.m3mini.build import build
    from bench.m3mini.run import CACHE
    from m3agent.samples.episode import build_sample_episode

    videos = build(CACHE / "videos")
    sample = work / "sample_episode.mp4"
    build_sample_episode(sample)
    return [*videos, sample]


def clips_of(video: Path) -> tuple[list, list[str]]:
    """The video's 30-second clips of 16 kHz audio, and the lines said in each."""
    from m3agent.media.clips import audio_excerpt
    from m3agent.samples.synth import read_timings

    timings = read_timings(video)
    count = int(-(-max(t.end for t in timings) // CLIP_SECONDS))
    audio = [audio_excerpt(video, k * CLIP_SECONDS, (k + 1) * CLIP_SECONDS) for k in range(count)]
    said = [" ".join(t.text for t in timings if t.text and int(t.start // CLIP_SECONDS) == k) for k in range(count)]
    return audio, said


def run(beams: list[int]) -> dict:
    from tqdm import tqdm

    from m3agent.media.clips import SAMPLE_RATE
    from m3agent.perception.asr.faster_whisper import FasterWhisperASR

    with tempfile.TemporaryDirectory() as tmp:
        data = [(video.stem, *clips_of(video)) for video in episodes(Path(tmp))]
    seconds_of_speech = sum(len(a) for _, audio, _ in data for a in audio) / SAMPLE_RATE
    results = {}
    for beam in beams:
        asr = FasterWhisperASR(beam_size=beam)
        errors = total = 0
        spent = 0.0
        misheard = []
        for name, audio, said in tqdm(data, desc=f"beam {beam}", unit="video"):
            start = time.perf_counter()
            heard = [segs for k in range(0, len(audio), 2) for segs in asr.transcribe_many(audio[k:k + 2])]
            spent += time.perf_counter() - start
            for reference, segments in zip(said, heard):
                text = " ".join(s.text for s in segments)
                wrong = word_errors(words(reference), words(text))
                errors, total = errors + wrong, total + len(words(reference))
                if wrong:
                    misheard.append((name, reference, text))
        results[beam] = {"errors": errors, "words": total, "seconds": spent, "misheard": misheard}
    return {"videos": [name for name, *_ in data], "speech_seconds": seconds_of_speech, "beams": results}


def render(r: dict) -> str:
    from bench.perf_memory import machine

    rows = "\n".join(f"| {beam} | {b['errors'] / b['words']:.1%} ({b['errors']}/{b['words']}) | {b['seconds']:.1f} s "
                     f"| {r['speech_seconds'] / b['seconds']:.0f}x |" for beam, b in r["beams"].items())
    beam, first = next(iter(r["beams"].items()))
    examples = "\n".join(f"- {name}: \"{ref}\" heard as \"{heard}\"" for name, ref, heard in first["misheard"][:4])
    return f"""Machine: {machine()}. Date: {date.today().isoformat()}. Command: `python -m bench.perf_asr --write docs/BENCHMARKS.md`.

Whisper tiny.en (the bundled ASR) on {len(r['videos'])} espeak videos with known lines ({', '.join(r['videos'])};
{r['speech_seconds']:.0f} s of audio), transcribed two 30-second clips a pass as memorization does. Word errors over
the lines' words; time for the whole audio, and audio seconds per second of it.

| beam size | word errors | time | real time |
|---|---|---|---|
{rows}

Some of what beam size {beam} mishears:
{examples}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--write", type=Path, default=None, help="update this file's perf_asr block")
    args = parser.parse_args()
    section = render(run(args.beams))
    print(section)
    if args.write:
        from bench.markers import replace_block

        replace_block(args.write, "perf_asr", section)


if __name__ == "__main__":
    main()
