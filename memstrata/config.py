"""Settings: keyword-only, validated, grouped into small frozen policy objects.

``MemoryManager.open(url, **settings)`` builds a :class:`Settings`; unknown
keys are rejected with :class:`~memstrata.errors.InvalidSettingError`. The
environment is read once, when settings are built, never at import:

* ``MEMSTRATA_HOME`` - data directory (default ``~/.local/share/memstrata``);
  the default database is ``$MEMSTRATA_HOME/memstrata.db``;
* ``MEMSTRATA_URL`` - database URL used when none is passed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, InstanceOf, field_validator
from pydantic import ValidationError as PydanticValidationError

from memstrata.errors import InvalidSettingError, InvalidURLError, StoreNotFoundError
from memstrata.policies.conflict import ConflictPolicy
from memstrata.policies.retention import RetentionPolicy
from memstrata.policies.retrieval import RetrievalPolicy
from memstrata.policies.write import WritePolicy

__all__ = ["DEFAULT_SCOPE", "SCOPE_PATTERN", "Settings", "default_home", "require_existing_store"]

DEFAULT_SCOPE = "default"
#: a scope name; ``\Z``, not ``$`` (which also matches before a trailing newline) -
#: use ``fullmatch`` all the same
SCOPE_PATTERN = re.compile(r"\A[a-z0-9][a-z0-9_.\-]{0,63}\Z")
DEFAULT_MAX_CONTENT_CHARS = 8000
DEFAULT_EMBEDDER = "minilm"


def default_home(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("MEMSTRATA_HOME"):
        return Path(env["MEMSTRATA_HOME"]).expanduser()
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memstrata"


class Settings(BaseModel):
    """Everything configurable about a :class:`~memstrata.MemoryManager`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: SQLAlchemy URL; SQLite file by default, ``postgresql://…`` for deployments
    url: str | None = None
    #: data directory (default database, index files)
    home: Path | None = None
    #: where derived index files live (default: beside the SQLite file, or in home)
    index_dir: Path | None = None
    #: vector backend registered under ``memstrata.vector_backends``
    vector_backend: str = "local"
    #: options of the vector backend (validated by the backend; unknown keys rejected)
    vector_options: dict[str, Any] = Field(default_factory=dict)
    #: the allowed scopes; ``None`` allows any well-formed scope name
    scopes: frozenset[str] | None = None
    max_content_chars: int = Field(default=DEFAULT_MAX_CONTENT_CHARS, gt=0, le=1_000_000)
    write: InstanceOf[WritePolicy] = Field(default_factory=WritePolicy)
    retrieval: InstanceOf[RetrievalPolicy] = Field(default_factory=RetrievalPolicy)
    retention: InstanceOf[RetentionPolicy] = Field(default_factory=RetentionPolicy)
    conflict: InstanceOf[ConflictPolicy] = Field(default_factory=ConflictPolicy)
    #: working memory: entry time-to-live, entries per session, sessions kept
    working_ttl_seconds: float = Field(default=900.0, gt=0)
    working_max_entries: int = Field(default=256, gt=0)
    working_max_sessions: int = Field(default=4096, gt=0)
    #: BM25 parameters of the keyword index. ``b`` is below the textbook 0.75:
    #: memories are short and a longer one usually carries more facts, so length
    #: is penalised less (docs/eval.md has the measurement)
    bm25_k1: float = Field(default=1.2, ge=0)
    bm25_b: float = Field(default=0.5, ge=0, le=1)
    #: the corpus size a word's IDF is read at, at least: a new user's dozen memories
    #: are scored as if among this many (docs/memory.md, "recall", has why)
    bm25_min_docs: int = Field(default=100, ge=0)
    keyword_memory_budget_bytes: int = Field(default=512 * 1024**2, gt=0)
    #: the embedder, by its name in the entry-point group ``memstrata.embedders``:
    #: ``"minilm"`` (all-MiniLM-L6-v2, English) or ``"e5-small"`` (multilingual-e5-small,
    #: ``memstrata[multilingual]``); changing it on a store with vectors is a ``reindex``
    embedder_name: str = DEFAULT_EMBEDDER
    #: path of a sentence-transformers model folder (default: the packaged MiniLM)
    embedding_model: Path | None = None
    #: who reads what a turn means (:mod:`memstrata.reading`): ``"auto"`` (the shipped
    #: model where its files are present, else the rules), ``"model"``, ``"cascade"``
    #: (the model, the rules where it is unsure) or ``"rules"``
    reader: Literal["auto", "model", "cascade", "rules"] = "auto"
    echo_sql: bool = False

    @field_validator("scopes", mode="before")
    @classmethod
    def _check_scopes(cls, value: Any) -> Any:
        if value is None:
            return None
        try:
            names = frozenset([value] if isinstance(value, str) else value)
        except TypeError as exc:  # not iterable, or unhashable names: a ValueError for pydantic
            raise ValueError(f"scopes must be a collection of names, not {value!r}") from exc
        bad = sorted(repr(n) for n in names
                     if not isinstance(n, str) or not SCOPE_PATTERN.fullmatch(n))
        if bad:
            raise ValueError(f"malformed scope names: {bad}")
        return names

    @classmethod
    def build(cls, **values: Any) -> Settings:
        """Validate keyword settings, filling ``url``/``home`` from the environment."""
        if "url" in values and values["url"] is not None and not str(values["url"]).strip():
            raise InvalidURLError("the database URL is empty")
        try:
            settings = cls(**values)
        except PydanticValidationError as exc:
            raise InvalidSettingError(f"invalid settings: {exc}") from exc
        home = settings.home or default_home()
        url = (
            settings.url or os.environ.get("MEMSTRATA_URL") or f"sqlite:///{home / 'memstrata.db'}"
        )
        return settings.model_copy(update={"home": home, "url": url})


def require_existing_store(url: str | None) -> None:
    """Refuse a SQLite store that does not exist yet (:class:`StoreNotFoundError`): for
    the commands that read or change what a store holds (``recall``, ``stats``,
    ``forget``, ``runs``, ...), where a mistyped ``--url`` would otherwise create a new,
    empty store and answer "nothing". The library itself creates a store on open."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    resolved = str(Settings.build(url=url).url)
    try:
        parsed = make_url(resolved)
    except ArgumentError:
        return  # MemoryManager.open says what is wrong with it
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return
    path = Path(str(parsed.database)).expanduser()
    if not path.exists():
        raise StoreNotFoundError(
            f"no memory store at {path}: check --url (or $MEMSTRATA_URL / $MEMSTRATA_HOME); "
            "a store is created by the first write ('memstrata remember', or the library)")
