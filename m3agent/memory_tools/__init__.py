"""Memory tools: how a chat model builds memory while it reads a stream (Mem-alpha style, on the memory core).

:mod:`m3agent.memory_tools.tools`: the insert/update/delete/search tools over core, semantic and episodic
memory, and the one text format their calls take in a reply. :mod:`m3agent.memory_tools.policy`: the protocol of
one stream (what the model is shown per chunk, what its reply does) and the untrained chat policy that
``m3agent remember --policy chat`` runs. The same protocol is the ``memory-build`` training environment
(:mod:`m3agent.envs.memory_build`).
"""
