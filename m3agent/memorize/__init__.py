"""Memorization: the memorizer contract beside its implementations (grounded, chat) and the pipeline."""

from m3agent.memorize.base import Memorizer, MemoryLines
from m3agent.memorize.pipeline import MemorizeReport, memorize_video

__all__ = ["MemorizeReport", "Memorizer", "MemoryLines", "memorize_video"]
