from m3agent.perception.voices.base import VoiceBackend

__all__ = ["VoiceBackend"]
