from m3agent.perception.asr.base import ASRBackend, Segment

__all__ = ["ASRBackend", "Segment"]
