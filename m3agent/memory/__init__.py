"""The memory graph: nodes, edges, characters, SQLite persistence and M3-Agent search."""

from m3agent.memory.errors import (
    CorruptDatabaseError,
    DatabaseNotFoundError,
    EmbedderMismatchError,
    ForeignDatabaseError,
    MemoryStoreError,
    SchemaVersionError,
    UnknownEntityError,
)
from m3agent.memory.graph import MemoryGraph
from m3agent.memory.model import NodeKind
from m3agent.memory.search import SeenClips, SearchResult

__all__ = [
    "CorruptDatabaseError", "DatabaseNotFoundError", "EmbedderMismatchError", "SeenClips", "ForeignDatabaseError",
    "MemoryGraph", "MemoryStoreError", "NodeKind", "SchemaVersionError", "SearchResult", "UnknownEntityError",
]
