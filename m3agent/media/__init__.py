"""Video probing and streaming 30-second clips (frames at a chosen rate, 16 kHz mono audio)."""

from m3agent.media.clips import ClipStream, MediaClip, iter_clips
from m3agent.media.probe import MediaError, VideoInfo, probe

__all__ = ["ClipStream", "MediaClip", "MediaError", "VideoInfo", "iter_clips", "probe"]
