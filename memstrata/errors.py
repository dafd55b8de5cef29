"""Typed errors raised by memstrata.

Every error a caller can act on is one of these; errors from SQLAlchemy, the
embedding model, openai or weaviate are translated at the seam where they occur
and chained with ``raise ... from exc``. Exceptions carry data and never log.

The tree::

    MemstrataError
    ├── InvalidInputError (also ValueError)      bad input: nothing was changed
    │   ├── MissingUserError                     no / malformed user id
    │   ├── EmptyContentError
    │   ├── ContentTooLargeError
    │   ├── UnknownTypeError                     not a MemoryType
    │   ├── UnknownScopeError                    malformed, or not in the configured scopes
    │   ├── DimensionMismatchError               vector of the wrong length
    │   ├── DatasetError                         an evaluation dataset that cannot be read
    │   └── InvalidSettingError
    │       └── InvalidURLError                  database URL that cannot be used
    ├── NotFoundError (also KeyError)
    │   ├── MemoryNotFoundError                  no such record *for this user*
    │   └── TaskNotFoundError
    ├── StateError
    │   ├── ClosedError                          the manager (or an index) is closed
    │   ├── NotInConflictError                   resolve_conflict on a record with no conflict
    │   └── LeaseHeldError                       another process holds a job's lease
    ├── StorageError                             the SQL system of record failed
    │   ├── SchemaVersionError                   database is newer than this code
    │   ├── ReadOnlyStorageError                 the database (or its directory) cannot be written
    │   └── StorageFullError                     the disk holding the database is full
    ├── IndexBackendError                        a vector / keyword index backend failed
    │   └── IndexPersistError                    index files could not be written (rebuilt from SQL)
    ├── EmbeddingError                           the embedding model failed
    │   └── ModelMismatchError                   stored vectors come from another model: run reindex
    ├── ReaderError                              a reader of meaning failed
    │   └── ReaderModelError                     the model reader's files are missing or damaged
    ├── LLMError                                 a language-model endpoint failed
    │   ├── LLMUnavailableError                  cannot connect (retried, then given up)
    │   ├── LLMTimeoutError                      no answer within the read timeout
    │   ├── LLMRateLimitError                    429 after the retry budget
    │   ├── LLMAuthError                         401 / 403: check the key
    │   ├── LLMResponseError                     4xx / malformed or unexpected response
    │   └── UnplannedModelCallError              a real model call while tests forbid them
    └── MissingDependencyError (also ImportError) an optional extra is not installed
"""

from __future__ import annotations

__all__ = [
    "ClosedError",
    "ContentTooLargeError",
    "DatasetError",
    "DimensionMismatchError",
    "EmbeddingError",
    "EmptyContentError",
    "IndexBackendError",
    "IndexPersistError",
    "InvalidInputError",
    "InvalidSettingError",
    "InvalidURLError",
    "LLMAuthError",
    "LLMError",
    "LLMRateLimitError",
    "LLMResponseError",
    "LLMTimeoutError",
    "LLMUnavailableError",
    "LeaseHeldError",
    "MemoryNotFoundError",
    "MemstrataError",
    "MissingDependencyError",
    "MissingUserError",
    "ModelMismatchError",
    "NotFoundError",
    "NotInConflictError",
    "ReadOnlyStorageError",
    "ReaderError",
    "ReaderModelError",
    "SchemaVersionError",
    "StateError",
    "StorageError",
    "StorageFullError",
    "StoreNotFoundError",
    "TaskNotFoundError",
    "UnknownScopeError",
    "UnknownTypeError",
    "UnplannedModelCallError",
]


class MemstrataError(Exception):
    """Base class of every error memstrata raises on purpose."""


class InvalidInputError(MemstrataError, ValueError):
    """The call was rejected before anything was changed."""


class MissingUserError(InvalidInputError):
    """A user id is required and was missing, empty or malformed."""


class EmptyContentError(InvalidInputError):
    """Memory content was empty or only whitespace."""


class ContentTooLargeError(InvalidInputError):
    """Memory content is longer than the configured limit."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"content has {length} characters; the limit is {limit}")
        self.length = length
        self.limit = limit


class UnknownTypeError(InvalidInputError):
    """A memory type that is not one of :class:`memstrata.MemoryType`."""


class UnknownScopeError(InvalidInputError):
    """A scope that is malformed or not among the configured scopes."""


class DimensionMismatchError(InvalidInputError):
    """A vector whose length differs from the index / model dimension."""

    def __init__(self, got: int, expected: int) -> None:
        super().__init__(f"vector has dimension {got}; expected {expected}")
        self.got = got
        self.expected = expected


class DatasetError(InvalidInputError):
    """An evaluation dataset (LoCoMo JSON or memstrata JSONL) is malformed.

    ``source`` names the file and ``line`` the 1-based JSONL line (or ``None``).
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None
                 ) -> None:
        where = "" if source is None else f"{source}{'' if line is None else f':{line}'}: "
        super().__init__(f"{where}{message}")
        self.source = source
        self.line = line


class InvalidSettingError(InvalidInputError):
    """A setting (keyword argument, environment value) that cannot be used."""


class InvalidURLError(InvalidSettingError):
    """A database URL that cannot be parsed or names an unsupported backend."""


class StoreNotFoundError(InvalidSettingError):
    """A command that reads an existing store was pointed at none (a mistyped ``--url``
    would otherwise create a new, empty one)."""


class NotFoundError(MemstrataError, KeyError):
    """Something looked up by id does not exist (for this user)."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep messages readable
        return str(self.args[0]) if self.args else ""


class MemoryNotFoundError(NotFoundError):
    """No memory with this id belongs to this user."""


class TaskNotFoundError(NotFoundError):
    """No task with this id belongs to this user."""


class StateError(MemstrataError):
    """The object is in a state that does not allow the call."""


class ClosedError(StateError):
    """The manager or backend has been closed."""


class NotInConflictError(StateError):
    """``resolve_conflict`` was called on a record that is not in a pending conflict."""


class LeaseHeldError(StateError):
    """Another process holds the lease of the job that was asked to run."""


class StorageError(MemstrataError):
    """The SQL system of record failed; the transaction was rolled back."""


class SchemaVersionError(StorageError):
    """The database schema is newer than this version of memstrata understands."""


class ReadOnlyStorageError(StorageError):
    """The database cannot be written: a read-only file, directory, medium or
    transaction. Reads may still work (see :class:`~memstrata.memory.Database`)."""


class StorageFullError(StorageError):
    """The disk (or quota) holding the database is full; nothing was written."""


class IndexBackendError(MemstrataError):
    """A derived index (vector or keyword) failed. SQL still holds every record."""


class IndexPersistError(IndexBackendError):
    """Derived index files could not be written (disk full, read-only, a file where a
    folder should be). Nothing is lost - SQL holds every record - and the users'
    shards are rebuilt from SQL when next used.

    ``user_ids`` are the users whose shards were not written (never put in the
    message); ``reason`` says why.
    """

    def __init__(self, user_ids: tuple[str, ...], reason: str) -> None:
        n = len(user_ids)
        super().__init__(
            f"could not persist index for {n} user{'' if n == 1 else 's'}: {reason}; "
            "they will be rebuilt from SQL"
        )
        self.user_ids = user_ids
        self.reason = reason

    @classmethod
    def combine(cls, errors: list[IndexPersistError]) -> IndexPersistError:
        """One error for several indexes (users counted once, reasons joined)."""
        users = tuple(dict.fromkeys(u for e in errors for u in e.user_ids))
        reasons = "; ".join(dict.fromkeys(e.reason for e in errors))
        return cls(users, reasons)


class EmbeddingError(MemstrataError):
    """The embedding model could not embed the text."""


class ModelMismatchError(EmbeddingError):
    """This user's stored vectors were made by another embedding model.

    Mixing vector spaces would make recall silently wrong, so memstrata refuses;
    ``memstrata reindex`` (or :meth:`MemoryManager.reindex`) re-embeds with the
    current model.
    """

    def __init__(self, user_id: str, stored: str, current: str) -> None:
        super().__init__(
            f"vectors of user {user_id!r} were made by {stored!r}, the current model is "
            f"{current!r}; run `memstrata reindex --user {user_id}` to re-embed"
        )
        self.user_id = user_id
        self.stored = stored
        self.current = current


class ReaderError(MemstrataError):
    """A reader of meaning (:mod:`memstrata.reading`) could not read."""


class ReaderModelError(ReaderError):
    """The model reader's files are missing, damaged or not the ones its manifest names."""


class LLMError(MemstrataError):
    """A language-model endpoint failed. ``retriable`` says whether trying later may help."""

    retriable: bool = False


class LLMUnavailableError(LLMError):
    retriable = True


class LLMTimeoutError(LLMError):
    retriable = True


class LLMRateLimitError(LLMError):
    retriable = True


class LLMAuthError(LLMError):
    pass


class LLMResponseError(LLMError):
    pass


class UnplannedModelCallError(LLMError):
    """A real model call was attempted while ``memstrata.testing`` forbids them."""


class MissingDependencyError(MemstrataError, ImportError):
    """An optional dependency is not installed; the message names the extra."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is not installed; install it with `pip install 'memstrata[{extra}]'`"
        )
        self.package = package
        self.extra = extra
