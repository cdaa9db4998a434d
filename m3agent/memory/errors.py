"""Errors of the memory store: each one names the file and what to do about it."""

from m3agent.errors import M3AgentError


class MemoryStoreError(M3AgentError):
    """Base class: the memory DB cannot be used as asked."""


class DatabaseNotFoundError(MemoryStoreError):
    pass


class CorruptDatabaseError(MemoryStoreError):
    pass


class ForeignDatabaseError(MemoryStoreError):
    """A valid SQLite file that was not written by m3agent."""


class SchemaVersionError(MemoryStoreError):
    pass


class EmbedderMismatchError(MemoryStoreError):
    """Vectors in the DB come from another embedder than the one configured."""


class UnknownEntityError(MemoryStoreError, LookupError):
    pass


class ReadOnlyDatabaseError(MemoryStoreError):
    """The DB file, or the folder it lives in, cannot be written."""


class DiskFullError(MemoryStoreError):
    """The disk (or a size limit) is full; the transaction in flight was rolled back, nothing else is lost."""


class DatabaseBusyError(MemoryStoreError):
    """Another process holds the DB's write lock for longer than the busy timeout."""
