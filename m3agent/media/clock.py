"""How a moment of a video is written for people and models: ``01:05``, ``1:02:03`` past an hour."""

from __future__ import annotations


def clock(seconds: float) -> str:
    """The second a timestamp falls in, as ``MM:SS`` (``H:MM:SS`` from an hour on); negative times are 00:00."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"
