"""Everything the app does, without the app: the room ``app/`` stands on.

``service`` is :class:`Workspace`, the one object the app calls (a data folder's memories, the queue, corrections,
answers); ``folder`` the one folder the app reads and serves (path checks, listings, upload checks); ``queue``
memorizations one at a time, each in its own ``m3agent memorize`` process; ``guard`` whom the app answers and
which files its file route gives out.
"""

from m3agent.workspace.service import APP_CHAT_BACKENDS, SAMPLE_EPISODE, ChatChoice, Workspace

__all__ = ["APP_CHAT_BACKENDS", "SAMPLE_EPISODE", "ChatChoice", "Workspace"]
