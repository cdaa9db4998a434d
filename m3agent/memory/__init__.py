"""The memory graph: nodes, edges, characters, SQLite persistence and M3-Agent search."""

from m3agent.memory.errors import (
    CorruptDatabaseError,
    DatabaseBusyError,
    DatabaseNotFoundError,
    DiskFullError,
    EmbedderMismatchError,
    ForeignDatabaseError,
    MemoryStoreError,
    ReadOnlyDatabaseError,
    SchemaVersionError,
    UnknownEntityError,
)
from m3agent.memory.graph import MemoryGraph
from m3agent.memory.model import NodeKind
from m3agent.memory.search import SearchResult, SeenClips

__all__ = [
    "CorruptDatabaseError", "DatabaseBusyError", "DatabaseNotFoundError", "DiskFullError", "EmbedderMismatchError",
    "ForeignDatabaseError", "MemoryGraph", "MemoryStoreError", "NodeKind", "ReadOnlyDatabaseError",
    "SchemaVersionError", "SearchResult", "SeenClips", "UnknownEntityError",
]
