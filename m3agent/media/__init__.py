"""Video probing and streaming 30-second clips (frames at a chosen rate, 16 kHz mono audio)."""

from m3agent.media.clips import ClipStream, MediaClip, audio_excerpt, iter_clips
from m3agent.media.probe import MediaError, VideoInfo, probe

__all__ = ["ClipStream", "audio_excerpt", "MediaClip", "MediaError", "VideoInfo", "iter_clips", "probe"]
