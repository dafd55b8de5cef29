"""OpenTelemetry spans for memstrata's operations (optional extra ``otel``).

memstrata creates spans through ``opentelemetry-api`` and the *global* tracer
provider, under the instrumentation scope ``memstrata``. It never configures an
exporter: the application does that once, before it uses memory::

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)

Without the extra (``opentelemetry`` not importable) every function here is a
no-op costing one global lookup and a call: :func:`span` hands back one shared
null context manager, and so it does while no provider is configured (the
API's default proxy would only make non-recording spans, at several times the
cost). ``benchmarks/bench_telemetry.py`` measures each case against a recall.

**Content.** Attributes are counts, ids of records, outcomes, model names and
error types - never memory content: no record text, query, slot value, entity
name, scope name, prompt or exception message. Content is recorded only when
enabled, by :func:`enable_content` or the environment variable
``MEMSTRATA_OTEL_CONTENT=1`` (read when a span is made, not at import), and then
only through :func:`set_content` / :meth:`SpanHandle.set_content`. Call sites
put content there and nowhere else, so one switch governs all of it.

**User ids are omitted by default**, not hashed: a user id is often an e-mail
address or an account number, and an unsalted hash of one is reversed by
hashing the candidates (a pseudonym, still personal data), while a salted one
cannot be joined across processes anyway. Above all ``forget_user`` can erase
memstrata's own tables but not a tracing backend, so nothing that identifies a
user goes there unless the application asked for content.

The switches here (:func:`set_enabled`, :func:`enable_content`) are
process-wide, as OpenTelemetry's global tracer provider is.

**Errors.** A span left by an exception gets status ``ERROR`` with the
exception's type as description and the attribute ``error.type`` (its
qualified class name). The exception itself (its message can quote content) is
recorded as a span event only when content is enabled.

Instrumenting code (the names are those of ``docs/telemetry.md``)::

    with telemetry.span("memstrata.recall", limit=k) as sp:
        hits = search(...)
        sp.set(hits=len(hits))                # -> attribute "memstrata.hits"
        sp.set_content(query=query)           # dropped unless content is enabled

Keyword attributes are prefixed with ``memstrata.``; a mapping passed first is
used verbatim (for semantic-convention names such as ``gen_ai.usage.input_tokens``).

Consolidation partitions (for the runner's workers): open one span per
partition *inside* the job span (or, in another thread or process, pass the
job span's context along - see ``docs/telemetry.md``)::

    with telemetry.span("memstrata.consolidation.partition", job=job.name,
                        partition=index, partitions=count) as sp:
        ...
        sp.set(users=n_users, actions=n_actions, outcome="done")
        # an error handled (reported, not raised): sp.record_error(exc)

Work handed to other threads keeps its parent only if the context goes with it:
``asyncio.to_thread`` copies it; a ``ThreadPoolExecutor`` does not - submit
``contextvars.copy_context().run`` (one copy per task: a context cannot be
entered by two threads at once), or the spans made there start new traces.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from functools import wraps
from types import TracebackType
from typing import Any, Final, ParamSpec, TypeVar

__all__ = [
    "CONTENT_ENV",
    "SCOPE",
    "AttributeValue",
    "SpanHandle",
    "content_enabled",
    "enable_content",
    "error_type",
    "is_recording",
    "set_attributes",
    "set_content",
    "set_enabled",
    "span",
    "traced",
]

#: the environment variable that turns content recording on ("1", "true", "yes")
CONTENT_ENV: Final = "MEMSTRATA_OTEL_CONTENT"
#: the instrumentation scope of every memstrata span
SCOPE: Final = "memstrata"
_PREFIX: Final = "memstrata."
_TRUE: Final = frozenset({"1", "true", "yes", "on"})

#: what OpenTelemetry accepts as an attribute value (``None`` values are dropped)
AttributeValue = (
    str | bool | int | float
    | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float] | None
)

_P = ParamSpec("_P")
_R = TypeVar("_R")

_UNSET: Final = object()
#: the ``opentelemetry.trace`` module, None when the extra is missing, _UNSET before the first use
_trace_module: Any = _UNSET
_tracer: Any = None
_inert: tuple[type, ...] | None = None
#: a recording provider was seen (OpenTelemetry sets the global provider at most once)
_configured: bool = False
_enabled: bool = True
#: explicit switch from enable_content(); None = follow the environment variable
_content: bool | None = None


def _otel() -> Any:
    """``opentelemetry.trace``, or None without the extra (imported on first use)."""
    global _trace_module
    if _trace_module is _UNSET:
        try:
            from opentelemetry import trace
        except ImportError:
            trace = None  # type: ignore[assignment]
        _trace_module = trace
    return _trace_module


def _inert_providers() -> tuple[type, ...] | None:
    """The API's providers that record nothing (None without the extra).

    While the global provider is one of these (no SDK configured yet, or a
    ``NoOpTracerProvider`` set on purpose), a span would only be a non-recording placeholder that
    keeps the current context as it is - what not opening one does, for less
    (``benchmarks/bench_telemetry.py``).
    """
    global _inert
    if _inert is None and _otel() is not None:
        _inert = (_trace_module.ProxyTracerProvider, _trace_module.NoOpTracerProvider)
    return _inert


def _get_tracer() -> Any:
    global _tracer
    if _tracer is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            release: str | None = version("memstrata")
        except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
            release = None
        # a ProxyTracer when no provider is set yet: it follows the provider set later
        _tracer = _otel().get_tracer(SCOPE, release)
    return _tracer


def set_enabled(enabled: bool) -> None:
    """Turn memstrata's spans off (or back on) even when a provider is configured."""
    global _enabled
    _enabled = enabled


def enable_content(enabled: bool | None = True) -> None:
    """Record memory content (texts, queries, user ids) on spans, or stop recording it.

    Overrides ``MEMSTRATA_OTEL_CONTENT`` for this process; ``None`` follows the
    variable again. Meant for debugging on data you may export: a tracing
    backend is outside ``forget_user``'s reach.
    """
    global _content
    _content = enabled


def content_enabled() -> bool:
    """Whether content attributes are recorded (:func:`enable_content`, else the env var)."""
    if _content is not None:
        return _content
    return os.environ.get(CONTENT_ENV, "").strip().lower() in _TRUE


def error_type(exc: BaseException) -> str:
    """The ``error.type`` of an exception: its qualified class name."""
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _clean(attributes: Mapping[str, AttributeValue] | None,
           keywords: Mapping[str, AttributeValue]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if attributes:
        out.update((k, v) for k, v in attributes.items() if v is not None)
    for key, value in keywords.items():
        if value is not None:
            out[_PREFIX + key] = value
    return out


class SpanHandle:
    """What ``with span(...) as sp`` gives: set attributes on that span.

    The no-op handle (telemetry off or not installed) has the same methods and
    ``recording`` False, so call sites need no branches; test ``recording`` only
    to skip computing an expensive attribute.
    """

    __slots__ = ("_span",)

    def __init__(self, otel_span: Any = None) -> None:
        self._span = otel_span

    @property
    def recording(self) -> bool:
        """Whether attributes set here go anywhere."""
        return self._span is not None and bool(self._span.is_recording())

    def set(self, attributes: Mapping[str, AttributeValue] | None = None, /,
            **keywords: AttributeValue) -> None:
        """Set attributes: keywords become ``memstrata.<name>``, mapping keys are verbatim."""
        if self._span is not None:
            self._span.set_attributes(_clean(attributes, keywords))

    def set_content(self, attributes: Mapping[str, AttributeValue] | None = None, /,
                    **keywords: AttributeValue) -> None:
        """Like :meth:`set`, but only when content recording is enabled."""
        if self._span is not None and content_enabled():
            self._span.set_attributes(_clean(attributes, keywords))

    def record_error(self, exc: BaseException) -> None:
        """Mark the span failed by ``exc`` (status ``ERROR``, ``error.type``) without
        raising it - for an error the code handles, like a consolidation bucket that
        fails and is reported. The exception event only with content enabled."""
        otel_span = self._span
        if otel_span is None or not otel_span.is_recording():
            return
        kind = error_type(exc)
        otel_span.set_attribute("error.type", kind)
        otel_span.set_status(_trace_module.Status(_trace_module.StatusCode.ERROR, kind))
        if content_enabled():
            otel_span.record_exception(exc)


_NOOP_HANDLE: Final = SpanHandle()


class _NoopSpan:
    __slots__ = ()

    def __enter__(self) -> SpanHandle:
        return _NOOP_HANDLE

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


_NOOP_SPAN: Final = _NoopSpan()


class _LiveSpan:
    __slots__ = ("_attributes", "_cm", "_name", "_span")

    def __init__(self, name: str, attributes: dict[str, Any]) -> None:
        self._name = name
        self._attributes = attributes
        self._cm: Any = None
        self._span = _NOOP_HANDLE

    def __enter__(self) -> SpanHandle:
        self._cm = _get_tracer().start_as_current_span(
            self._name, attributes=self._attributes,
            record_exception=False, set_status_on_exception=False)
        self._span = SpanHandle(self._cm.__enter__())
        return self._span

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool | None:
        if exc is not None:
            self._span.record_error(exc)
        result: bool | None = self._cm.__exit__(exc_type, exc, tb)
        return result


def span(name: str, attributes: Mapping[str, AttributeValue] | None = None, /,
         **keywords: AttributeValue) -> AbstractContextManager[SpanHandle]:
    """A context manager opening a span named ``name`` as the current span.

    Keyword attributes become ``memstrata.<keyword>``; ``attributes`` keys are
    used as given. Never pass memory content here - use ``set_content``.
    """
    global _configured
    if not _enabled:
        return _NOOP_SPAN
    if not _configured:  # a provider, once set, stays: stop asking after the first one
        inert = _inert_providers()
        if inert is None or isinstance(_trace_module.get_tracer_provider(), inert):
            return _NOOP_SPAN
        _configured = True
    return _LiveSpan(name, _clean(attributes, keywords))


def traced(name: str, attributes: Mapping[str, AttributeValue] | None = None, /,
           **keywords: AttributeValue) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorator: run each call of the function inside ``span(name, ...)``."""

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @wraps(fn)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with span(name, attributes, **keywords):
                return fn(*args, **kwargs)

        return wrapper

    return decorate


def _current() -> Any:
    if not _enabled:
        return None
    trace = _otel()
    return None if trace is None else trace.get_current_span()


def is_recording() -> bool:
    """Whether the current span records (to skip computing expensive attributes)."""
    current = _current()
    return current is not None and bool(current.is_recording())


def set_attributes(attributes: Mapping[str, AttributeValue] | None = None, /,
                   **keywords: AttributeValue) -> None:
    """Set attributes on the current span (whatever opened it); see :meth:`SpanHandle.set`."""
    current = _current()
    if current is not None:
        current.set_attributes(_clean(attributes, keywords))


def set_content(attributes: Mapping[str, AttributeValue] | None = None, /,
                **keywords: AttributeValue) -> None:
    """Set content attributes on the current span, only when content is enabled."""
    current = _current()
    if current is not None and content_enabled():
        current.set_attributes(_clean(attributes, keywords))
