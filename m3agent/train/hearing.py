"""What speech recognition hears of a world's lines: the ``heard`` rendering of training worlds.

A video's memory holds what the recogniser heard, not what was said: the bundled tiny.en turns "I bought a red
umbrella at the market" into "I'm water red umbrella to the market". A control model trained only on the
script's clean sentences has never read such a line. :func:`heard_lines` says each spoken scene with the
speaker's espeak-ng voice (as :func:`m3agent.train.render.scenes` would for a video), lays the speech on the
world's timeline, cuts it into 30-second clips and passes them through the ASR backend two clips a call, as
the perceiver does (:meth:`m3agent.perception.pipeline.Perceiver._speech`), for a fraction of a video's cost:
no frames, faces or voices.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from m3agent.media.clips import SAMPLE_RATE, audio_excerpt
from m3agent.perception.asr.base import ASRBackend
from m3agent.train.worlds import CLIP_SECONDS, SCENE_SECONDS, World, scene_start

SPEECH_OFFSET = 0.5  # seconds into its scene a line starts, as build_episode places it
CLIPS_A_CALL = 2  # the perceiver recognises two clips' speech in one pass


def heard_lines(world: World, asr: ASRBackend, voices: dict[str, str]) -> dict[int, str]:
    """``{scene: what the recogniser heard of its line}``; a scene it heard nothing of is left out, as a video's
    memory would have no speech line for it. ``voices``: voice key -> espeak-ng voice."""
    from m3agent.samples.synth import speak

    track = np.zeros(int(world.duration * SAMPLE_RATE), np.float32)
    with tempfile.TemporaryDirectory(prefix="m3hear-") as tmp:
        for line in world.scenes:
            if not line.speaker:
                continue
            wav = Path(tmp) / f"scene-{line.scene:02d}.wav"
            speak(line.text, voices[world.person(line.speaker).voice], wav)
            audio = audio_excerpt(wav, 0.0, SCENE_SECONDS - SPEECH_OFFSET)  # a line never runs past its scene
            at = round((scene_start(line.scene) + SPEECH_OFFSET) * SAMPLE_RATE)
            track[at: at + audio.size] = audio
    clip = int(CLIP_SECONDS * SAMPLE_RATE)
    clips = [track[start: start + clip] for start in range(0, track.size, clip)]
    heard: dict[int, list[str]] = {}
    for first in range(0, len(clips), CLIPS_A_CALL):
        for index, segments in enumerate(asr.transcribe_many(clips[first: first + CLIPS_A_CALL], SAMPLE_RATE)):
            for segment in segments:
                second = (first + index) * CLIP_SECONDS + segment.start
                heard.setdefault(int(second // SCENE_SECONDS), []).append(segment.text)
    return {scene: " ".join(texts) for scene, texts in sorted(heard.items())}

