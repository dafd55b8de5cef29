"""OpenTelemetry spans, read back through the SDK's real in-memory exporter.

OpenTelemetry lets a process set the global tracer provider once, so the
``exporter`` fixture installs one SDK ``TracerProvider`` - or, if another test
module already installed one, adds its processor to that provider - and each
test clears the exporter. When the module is done the exporter stops keeping
spans and, if this module installed the provider, memstrata's spans are switched
off again (``telemetry.set_enabled(False)``): the rest of the suite runs as it
would without a provider, instead of paying for spans nobody reads.

Whether content is recorded is a process-wide switch too: the ``spans`` fixture
turns it off explicitly (so an exported ``MEMSTRATA_OTEL_CONTENT`` cannot change
the outcome) and back to the environment afterwards. The environment variable
itself and the missing-extra case run in child processes, where the variable is
set before Python starts and the ``opentelemetry`` package is made unimportable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from memstrata import ManualClock, MemoryManager, telemetry
from memstrata.consolidation import ConsolidationSettings, Consolidator
from memstrata.errors import LLMError, MemstrataError
from memstrata.llm import OpenAIClient, RecordingModel, Retry
from memstrata.memory.embedder import Embedder
from memstrata.testing import OpenAICompatServer, Reply

USER = "alice@example.com"
TEXTS = ("I prefer window seats on long flights", "My sister lives in Porto")
QUERY = "which seat does she like on a plane"
TURN = "I'm allergic to peanuts, please remember that"
PROMPT = "Summarise the trip to Lisbon for me"


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    exp = InMemorySpanExporter()
    configured = isinstance(trace.get_tracer_provider(), TracerProvider)
    if not configured:
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()  # ours, or the one another module set first
    assert isinstance(provider, TracerProvider), "the global provider is not the SDK's"
    provider.add_span_processor(SimpleSpanProcessor(exp))
    yield exp
    # the provider stays for the rest of the session: keep no more spans, and make none
    # if there was no provider before (what the modules after this one would have seen)
    exp.clear()
    exp.shutdown()
    if not configured:
        telemetry.set_enabled(False)


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    telemetry.set_enabled(True)
    telemetry.enable_content(False)
    try:
        yield exporter
    finally:
        telemetry.enable_content(None)
        telemetry.set_enabled(True)


@pytest.fixture
def mm(sqlite_url: str, embedder: Embedder, clock: ManualClock, tmp_path: Path
       ) -> Iterator[MemoryManager]:
    with MemoryManager.open(sqlite_url, embedder=embedder, clock=clock,
                            index_dir=tmp_path / "index") as manager:
        yield manager


@pytest.fixture
def server() -> Iterator[OpenAICompatServer]:
    with OpenAICompatServer() as srv:
        yield srv


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = named(exporter, name)
    assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
    return found[0]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def recorded_strings(spans: Iterable[ReadableSpan]) -> list[str]:
    """Every string a tracing backend would receive: names, attributes, events, status."""
    out: list[str] = []

    def add(values: Iterable[object]) -> None:
        for value in values:
            out.extend(str(v) for v in value) if isinstance(value, tuple) else \
                out.append(str(value))

    for span in spans:
        out.append(span.name)
        add((span.attributes or {}).values())
        for event in span.events:
            out.append(event.name)
            add((event.attributes or {}).values())
        if span.status.description:
            out.append(span.status.description)
    return out


def assert_no_content(spans: Iterable[ReadableSpan], *secrets: str) -> None:
    strings = recorded_strings(spans)
    for secret in secrets:
        leaks = [s for s in strings if secret.lower() in s.lower()]
        assert not leaks, f"{secret!r} reached a span: {leaks}"


def parent_id(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


# ------------------------------------------------------------------ memory operations


def test_remember_recall_observe_spans_carry_counts_ids_and_outcomes_but_no_content(
        mm: MemoryManager, spans: InMemorySpanExporter) -> None:
    first = mm.remember(USER, TEXTS[0], type="preference")
    again = mm.remember(USER, TEXTS[0], type="preference")
    mm.remember(USER, TEXTS[1])
    seen = mm.observe(USER, "session-1", "user", TURN)
    hits = mm.recall(USER, QUERY, k=3)

    remembers = named(spans, "memstrata.remember")
    assert [attrs(s)["memstrata.outcome"] for s in remembers] == \
        ["written", again.outcome, "written"]
    assert attrs(remembers[0])["memstrata.memory_id"] == first.record_id
    assert attrs(remembers[0])["memstrata.memory_type"] == "preference"
    assert "memstrata.memory_type" not in attrs(remembers[2])

    recall = attrs(one(spans, "memstrata.recall"))
    assert hits and recall["memstrata.hits"] == len(hits)
    assert list(recall["memstrata.memory_ids"]) == [h.record.id for h in hits]
    assert recall["memstrata.top_score"] == pytest.approx(hits[0].score)
    assert recall["memstrata.k"] == 3 and recall["memstrata.query_chars"] == len(QUERY)

    observe = attrs(one(spans, "memstrata.observe"))
    assert observe["memstrata.turn_id"] == seen.turn_id
    assert observe["memstrata.role"] == "user"
    assert observe["memstrata.candidates"] == len(seen.candidates) >= 1
    assert list(observe.get("memstrata.memory_ids", ())) == list(seen.written)
    assert observe.get("memstrata.written", 0) == \
        sum(d.outcome == "written" for d in seen.decisions)

    everything = spans.get_finished_spans()
    assert all(s.status.status_code is not StatusCode.ERROR for s in everything)
    assert_no_content(everything, USER, *TEXTS, QUERY, TURN, "session-1", "peanuts")


def test_embedding_calls_are_children_of_the_memory_operation(
        mm: MemoryManager, spans: InMemorySpanExporter) -> None:
    mm.remember(USER, TEXTS[0])
    spans.clear()
    mm.recall(USER, QUERY)
    recall = one(spans, "memstrata.recall")
    embeds = [s for s in spans.get_finished_spans()
              if attrs(s).get("gen_ai.operation.name") == "embeddings"]
    assert embeds, [s.name for s in spans.get_finished_spans()]
    assert all(parent_id(e) == span_id(recall) for e in embeds)
    model = mm.embedder.name.split(":")[0]
    first = attrs(embeds[0])
    assert embeds[0].name == f"embeddings {model}"
    assert first["gen_ai.request.model"] == model
    assert first["memstrata.texts"] == 1
    assert first["memstrata.encoded"] + first["memstrata.cached"] == 1
    assert first["gen_ai.embeddings.dimension.count"] == mm.embedder.dim


def test_embedding_cache_hits_are_counted(embedder: Embedder,
                                          spans: InMemorySpanExporter) -> None:
    text = "a sentence embedded twice in telemetry's test"
    embedder.embed([text])
    embedder.embed([text, text + " and once more"])
    first, second = [attrs(s) for s in spans.get_finished_spans()]
    assert (first["memstrata.texts"], second["memstrata.texts"]) == (1, 2)
    assert second["memstrata.cached"] >= 1 and second["memstrata.encoded"] <= 1
    assert_no_content(spans.get_finished_spans(), text)


def test_the_multilingual_embedder_makes_embedding_spans(
        spans: InMemorySpanExporter) -> None:
    from memstrata.memory.embedder import embed_queries, load_embedder

    model = load_embedder("e5-small")
    model.embed(["Ich mag Fensterplätze", "J'aime les sièges côté hublot"])
    embed_queries(model, ["Welcher Platz?"])
    passages, queries = spans.get_finished_spans()
    assert passages.name == queries.name == "embeddings multilingual-e5-small-q4"
    assert (attrs(passages)["memstrata.texts"], attrs(passages)["memstrata.query"]) == (2, False)
    assert (attrs(queries)["memstrata.texts"], attrs(queries)["memstrata.query"]) == (1, True)
    assert attrs(passages)["memstrata.encoded"] == 2
    assert attrs(queries)["gen_ai.embeddings.dimension.count"] == model.dim
    assert_no_content(spans.get_finished_spans(), "Fenster", "hublot", "Platz")


def test_an_application_span_parents_memstrata_spans(
        mm: MemoryManager, spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("my-app")
    with tracer.start_as_current_span("handle-request") as app:
        mm.remember(USER, TEXTS[0])
        mm.recall(USER, QUERY)
    root = one(spans, "handle-request")
    for name in ("memstrata.remember", "memstrata.recall"):
        child = one(spans, name)
        assert parent_id(child) == app.get_span_context().span_id == span_id(root)
        assert child.context is not None and root.context is not None
        assert child.context.trace_id == root.context.trace_id


def test_async_calls_are_children_of_the_awaiting_span(
        mm: MemoryManager, spans: InMemorySpanExporter) -> None:
    import asyncio

    from memstrata.memory import AsyncMemoryManager

    async def handle() -> None:
        async with AsyncMemoryManager(mm, max_threads=4, close_manager=False) as memory:
            with trace.get_tracer("my-app").start_as_current_span("async-request"):
                await asyncio.gather(memory.remember(USER, TEXTS[0]),
                                     memory.remember(USER, TEXTS[1]),
                                     memory.recall(USER, QUERY))

    asyncio.run(handle())
    root = one(spans, "async-request")
    children = named(spans, "memstrata.remember") + named(spans, "memstrata.recall")
    assert len(children) == 3
    assert {parent_id(c) for c in children} == {span_id(root)}


def test_content_is_recorded_only_when_enabled(mm: MemoryManager,
                                               spans: InMemorySpanExporter) -> None:
    telemetry.enable_content()
    decision = mm.remember(USER, TEXTS[0])
    mm.recall(USER, QUERY)
    mm.observe(USER, "session-1", "user", TURN)
    remember = attrs(one(spans, "memstrata.remember"))
    assert remember["memstrata.text"] == TEXTS[0]
    assert remember["memstrata.user_id"] == USER
    assert remember["memstrata.reason"] == decision.reason
    assert attrs(one(spans, "memstrata.recall"))["memstrata.query"] == QUERY
    observe = attrs(one(spans, "memstrata.observe"))
    assert (observe["memstrata.text"], observe["memstrata.session_id"]) == (TURN, "session-1")


def test_a_failed_operation_sets_error_status_with_the_type_only(
        mm: MemoryManager, spans: InMemorySpanExporter) -> None:
    bad_user = "bob\x00secret"
    with pytest.raises(MemstrataError) as caught:
        mm.recall(bad_user, QUERY)
    recall = one(spans, "memstrata.recall")
    kind = f"{type(caught.value).__module__}.{type(caught.value).__qualname__}"
    assert recall.status.status_code is StatusCode.ERROR
    assert recall.status.description == kind
    assert attrs(recall)["error.type"] == kind
    assert not recall.events  # the message may quote content: not without enable_content
    assert_no_content([recall], "bob", QUERY)


def test_set_enabled_false_makes_no_spans(mm: MemoryManager,
                                          spans: InMemorySpanExporter) -> None:
    telemetry.set_enabled(False)
    with telemetry.span("memstrata.test") as sp:
        assert not sp.recording
        mm.remember(USER, TEXTS[0])
    assert spans.get_finished_spans() == ()


def test_public_helpers(spans: InMemorySpanExporter) -> None:
    @telemetry.traced("memstrata.test.outer", {"custom.key": 1}, flag=True)
    def outer() -> bool:
        telemetry.set_attributes(answer=42)
        telemetry.set_content(secret="hidden")
        with telemetry.span("memstrata.test.inner") as sp:
            sp.set(nested=True)
        return telemetry.is_recording()

    assert outer() is True
    assert telemetry.is_recording() is False  # no current span out here
    inner, outer_span = spans.get_finished_spans()
    assert parent_id(inner) == span_id(outer_span)
    assert attrs(outer_span) == {"custom.key": 1, "memstrata.flag": True,
                                 "memstrata.answer": 42}
    assert attrs(inner) == {"memstrata.nested": True}


# ------------------------------------------------------------------ model calls


def test_an_llm_call_through_the_loopback_server(
        mm: MemoryManager, clock: ManualClock, server: OpenAICompatServer,
        spans: InMemorySpanExporter) -> None:
    server.push(Reply.text("The trip went well.", prompt_tokens=21, completion_tokens=7))
    with OpenAIClient(model="loopback-model", base_url=server.base_url, api_key="k") as client:
        model = RecordingModel(client, db=mm.db, clock=clock)
        result = model.chat_for([{"role": "user", "content": PROMPT}], user_id=USER,
                                task_id="task-7", turn=2, purpose="summarize")
    assert result.content == "The trip went well."
    chat = one(spans, "chat loopback-model")
    a = attrs(chat)
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == "loopback-model"
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (21, 7)
    assert list(a["gen_ai.response.finish_reasons"]) == ["stop"]
    assert (a["memstrata.purpose"], a["memstrata.task_id"], a["memstrata.turn"]) == \
        ("summarize", "task-7", 2)
    assert a["memstrata.attempts"] == 1 and a["memstrata.outcome"] == "ok"
    assert a["memstrata.latency_ms"] > 0
    assert_no_content([chat], USER, PROMPT, "Lisbon", "went well")


def test_a_failed_llm_call_is_an_error_span(
        mm: MemoryManager, clock: ManualClock, server: OpenAICompatServer,
        spans: InMemorySpanExporter) -> None:
    server.push(Reply.error(400, f"bad request about {PROMPT}"))
    with OpenAIClient(model="loopback-model", base_url=server.base_url, api_key="k",
                      retry=Retry(max_attempts=1)) as client:
        model = RecordingModel(client, db=mm.db, clock=clock)
        with pytest.raises(LLMError) as caught:
            model.chat_for([{"role": "user", "content": PROMPT}], user_id=USER,
                           task_id=None, turn=None, purpose="summarize")
    chat = one(spans, "chat loopback-model")
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == telemetry.error_type(caught.value)
    assert issubclass(type(caught.value), LLMError)
    assert "memstrata.outcome" not in attrs(chat)
    assert_no_content([chat], USER, PROMPT, "Lisbon")


# ------------------------------------------------------------------ consolidation


def test_a_consolidation_job_span_parents_its_model_calls(
        mm: MemoryManager, clock: ManualClock, server: OpenAICompatServer,
        spans: InMemorySpanExporter) -> None:
    for text in ("We are planning the summer trip.", TEXTS[1] + " and we visit every July."):
        mm.observe(USER, "s1", "user", text, scope="travel")
        mm.observe(USER, "s1", "assistant", "Sure.", scope="travel")
    clock.advance(hours=1)
    server.push(Reply.text(json.dumps({
        "summary": "Planned the July visit to the sister in Porto.",
        "facts": [{"content": "Visits her sister in Porto every July", "type": "profile",
                   "attribute": None, "value": None, "confidence": 0.95}]}),
        prompt_tokens=120, completion_tokens=30))
    # the LLM reader's call (the unread turns) reads nothing; it is a span of the trace too
    server.on_chat = lambda request: Reply.text('{"items": []}')
    settings = ConsolidationSettings.build(
        batch_users=2, schedule={"timezone": "UTC"},
        llm={"model": "scripted", "base_url": server.base_url, "api_key": "k", "retries": 0})
    spans.clear()
    report = Consolidator(mm, settings=settings).run("summarize")
    assert report.status == "finished" and report.method == "llm"

    job = one(spans, "memstrata.consolidation.job")
    a = attrs(job)
    assert (a["memstrata.job"], a["memstrata.outcome"], a["memstrata.run_id"]) == \
        ("summarize", "finished", report.run_id)
    assert a["memstrata.dry_run"] is False and a["memstrata.method"] == "llm"
    assert a["memstrata.users"] == report.users == 1
    assert a["memstrata.llm_calls"] == report.llm_calls >= 1
    assert a["memstrata.prompt_tokens"] == report.prompt_tokens
    assert a["memstrata.actions"] == sum(report.counts.values())
    for action, n in report.counts.items():
        assert a[f"memstrata.action.{action}"] == n

    chats = named(spans, "chat scripted")
    assert len(chats) == report.llm_calls
    assert job.context is not None
    for chat in chats:  # directly under the job, or under a span of its own (a partition)
        assert chat.context is not None and chat.context.trace_id == job.context.trace_id
    assert_no_content(spans.get_finished_spans(), USER, "Porto", "summer trip")


def test_concurrent_model_calls_of_a_job_stay_in_its_trace(
        mm: MemoryManager, clock: ManualClock, spans: InMemorySpanExporter) -> None:
    def summarizer(request: dict[str, Any]) -> Reply:
        return Reply.text(json.dumps({"summary": "Talked about trains.", "facts": []}))

    for n in range(4):
        mm.observe(f"u{n}", "s1", "user", f"I need a train to city {n}.", scope="travel")
    clock.advance(hours=1)
    with OpenAICompatServer(on_chat=summarizer) as srv:
        settings = ConsolidationSettings.build(
            batch_users=4, schedule={"timezone": "UTC"},
            llm={"model": "scripted", "base_url": srv.base_url, "api_key": "k",
                 "retries": 0, "concurrency": 4})
        spans.clear()
        report = Consolidator(mm, settings=settings).run("summarize")
    assert report.llm_calls == 8  # a summary and a reading of the unread turn a user
    job = one(spans, "memstrata.consolidation.job")
    chats = named(spans, "chat scripted")
    assert len(chats) == 8
    assert {parent_id(c) for c in chats} == {span_id(job)}


def test_a_dry_run_is_a_job_span_too(mm: MemoryManager, spans: InMemorySpanExporter) -> None:
    report = Consolidator(mm, settings=ConsolidationSettings.build(
        batch_users=2, schedule={"timezone": "UTC"})).run("expire", dry_run=True)
    a = attrs(one(spans, "memstrata.consolidation.job"))
    assert (a["memstrata.job"], a["memstrata.dry_run"]) == ("expire", True)
    assert a["memstrata.outcome"] == report.status


def test_partitions_of_a_run_are_spans_naming_the_run(
        mm: MemoryManager, clock: ManualClock, spans: InMemorySpanExporter) -> None:
    from memstrata.consolidation.worker import Worker

    for user in ("u1", "u2", "u3", "u4", "u5"):
        mm.remember(user, "I like jazz.", type="preference")
    clock.advance(days=200)
    jobs = Consolidator(mm, settings=ConsolidationSettings.build(
        batch_users=2, partitions=2, schedule={"timezone": "UTC"}))
    run_id = jobs.create_run("expire").run_id
    spans.clear()
    Worker(jobs).run_until_idle()
    parts = named(spans, "memstrata.consolidation.partition")
    assert sorted(attrs(p)["memstrata.partition"] for p in parts) == [0, 1]
    for part in parts:
        a = attrs(part)
        assert (a["memstrata.run_id"], a["memstrata.job"], a["memstrata.partitions"],
                a["memstrata.outcome"]) == (run_id, "expire", 2, "done")
        assert part.status.status_code is not StatusCode.ERROR
    assert_no_content(spans.get_finished_spans(), "jazz", "u1")


def test_record_error_marks_a_handled_failure(spans: InMemorySpanExporter) -> None:
    with telemetry.span("memstrata.test") as sp:
        try:
            raise LLMError(f"the model quoted {PROMPT}")
        except LLMError as exc:
            sp.record_error(exc)
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert attrs(span) == {"error.type": "memstrata.errors.LLMError"}
    assert not span.events
    telemetry.enable_content()
    with telemetry.span("memstrata.test") as sp:
        sp.record_error(LLMError(PROMPT))
    assert [e.name for e in spans.get_finished_spans()[-1].events] == ["exception"]


# ------------------------------------------------------------------ other processes


def _child(code: str, **env: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
        timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, check=False)
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


_SDK = """
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
"""


def test_the_environment_variable_enables_content() -> None:
    code = _SDK + """
    import json
    from memstrata import telemetry
    with telemetry.span("memstrata.test") as sp:
        sp.set_content(query="what do I like")
        telemetry.set_content(user_id="u1")
    (span,) = exporter.get_finished_spans()
    print(json.dumps({"on": telemetry.content_enabled(), "attrs": dict(span.attributes)}))
    """
    on = _child(code, MEMSTRATA_OTEL_CONTENT="1")
    assert on == {"on": True, "attrs": {"memstrata.query": "what do I like",
                                        "memstrata.user_id": "u1"}}
    off = _child(code, MEMSTRATA_OTEL_CONTENT="0")
    assert off == {"on": False, "attrs": {}}


def test_without_the_extra_everything_is_a_no_op(tmp_path: Path) -> None:
    """``opentelemetry`` unimportable (as without ``memstrata[otel]``): the memory
    operations run and every telemetry function is the shared no-op."""
    result = _child(f"""
    import json, sys
    sys.modules["opentelemetry"] = None  # what an absent package looks like to import
    from memstrata import MemoryManager, telemetry
    noop = telemetry.span("memstrata.test", n=1)
    with noop as sp:
        sp.set(n=2)
        sp.set_content(text="x")
        telemetry.set_attributes(n=3)
        telemetry.set_content(text="y")
        recording = sp.recording or telemetry.is_recording()
    traced = telemetry.traced("memstrata.test")(lambda: 7)()
    with MemoryManager.open("sqlite:///{tmp_path / 'm.db'}") as mm:
        mm.remember("u1", "I prefer aisle seats")
        hits = mm.recall("u1", "aisle or window?")
    print(json.dumps({{
        "shared": noop is telemetry.span("memstrata.other"),
        "recording": recording, "traced": traced, "hits": len(hits),
        "imported": any(m.startswith("opentelemetry.") for m in sys.modules),
    }}))
    """, MEMSTRATA_HOME=str(tmp_path / "home"))
    assert result == {"shared": True, "recording": False, "traced": 7, "hits": 1,
                      "imported": False}


def test_spans_start_recording_when_the_application_configures_a_provider_later() -> None:
    code = """
    import json
    from memstrata import telemetry
    before = telemetry.span("memstrata.test") is telemetry.span("memstrata.other")
    with telemetry.span("memstrata.unseen"):
        pass
    """ + _SDK + """
    with telemetry.span("memstrata.seen", n=1) as sp:
        recording = sp.recording
    print(json.dumps({"shared_before": before, "recording": recording,
                      "names": [s.name for s in exporter.get_finished_spans()]}))
    """
    assert _child(code) == {"shared_before": True, "recording": True,
                            "names": ["memstrata.seen"]}


def test_all_lists_exactly_the_public_names() -> None:
    import inspect

    exported = set(telemetry.__all__)
    assert all(hasattr(telemetry, n) for n in exported)
    public = {n for n, obj in vars(telemetry).items()
              if not n.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
              and getattr(obj, "__module__", "") == "memstrata.telemetry"}
    assert public == exported - {"CONTENT_ENV", "SCOPE", "AttributeValue"}
