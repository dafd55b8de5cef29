"""What memstrata's OpenTelemetry spans cost: per span, and on a recall.

Modes of :mod:`memstrata.telemetry`:

* ``missing_extra`` - ``opentelemetry`` unimportable (a child process with the
  package blocked, as without ``memstrata[otel]``): :func:`span` returns the
  shared no-op;
* ``disabled`` - ``telemetry.set_enabled(False)`` in this process: the same
  early return, measured in-process so it can sit next to the recall;
* ``api_no_provider`` - the API installed but no provider configured (the
  library default): memstrata sees the API's inert proxy provider and hands
  back the no-op too (the proxy's non-recording spans cost several times more);
* ``disabled_again`` - the A/A control of part 2: disabled against disabled;
* ``sdk_recording`` - an SDK ``TracerProvider`` whose processor keeps nothing
  (every span is created, recorded, attributed and ended; only export is left
  out, which is the application's cost, not ours).

Part 1 times one span with the attributes a recall sets (open, set, close), a
million times. Part 2 times ``recall(k=5)`` on 2,000 real LoCoMo sentences in
a real SQLite file, each query recalled in a mode and with telemetry disabled
back to back (the order alternating), so the machine's drift hits both alike;
the mean of the two orders' median differences is the recall's overhead. The queries are
embedded once beforehand, so a recall here is its cheapest (no model call) and
the spans' share is the largest it gets.

Run: ``python benchmarks/bench_telemetry.py [--quick]`` ->
``benchmarks/results/telemetry.json``. Other processes share the CPUs: compare
modes of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import corpus, percentiles, write_result

os.environ.setdefault("HF_HUB_OFFLINE", "1")

_SPAN_LOOP = r"""
import time
from memstrata import telemetry

def per_span_ns(n):
    span = telemetry.span
    start = time.perf_counter_ns()
    for _ in range(n):
        with span("memstrata.recall", k=5, record_use=True) as sp:
            sp.set(hits=5, top_score=0.5)
            sp.set_content(query="q")
    return (time.perf_counter_ns() - start) / n
"""

_MISSING = _SPAN_LOOP + r"""
import json, sys
assert "opentelemetry" not in sys.modules or sys.modules["opentelemetry"] is None
print(json.dumps({"ns": min(per_span_ns(N) for _ in range(3))}))
"""


def missing_extra_ns(n: int) -> float:
    code = f"import sys; sys.modules['opentelemetry'] = None\nN = {n}\n" + _MISSING
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["ns"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_spans = 100_000 if args.quick else 1_000_000
    n_records, rounds, per_round = (500, 3, 50) if args.quick else (2_000, 8, 100)

    from opentelemetry import trace

    from memstrata import MemoryManager, telemetry

    namespace: dict[str, Any] = {}
    exec(_SPAN_LOOP, namespace)
    per_span_ns = namespace["per_span_ns"]

    span_ns: dict[str, float] = {"missing_extra": missing_extra_ns(n_spans)}
    telemetry.set_enabled(False)
    span_ns["disabled"] = min(per_span_ns(n_spans) for _ in range(3))
    telemetry.set_enabled(True)
    span_ns["api_no_provider"] = min(per_span_ns(n_spans) for _ in range(3))

    # the global provider can be set once: everything without it is measured above
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    provider = TracerProvider()
    provider.add_span_processor(SpanProcessor())  # the base class: keeps nothing
    texts = corpus(n_records)
    queries = corpus(n_records + per_round)[n_records:]
    samples: dict[str, list[float]] = {"disabled": [], "disabled_again": [],
                                       "api_no_provider": [], "sdk_recording": []}
    #: per query, this mode's recall time minus the disabled one's, measured back to back
    #: with this mode first / second (a repeated query is faster the second time: the
    #: mean of the two medians cancels that)
    arms = ("disabled_again", "api_no_provider", "sdk_recording")
    first: dict[str, list[float]] = {m: [] for m in arms}
    second: dict[str, list[float]] = {m: [] for m in arms}

    with tempfile.TemporaryDirectory() as tmp, \
            MemoryManager.open(f"sqlite:///{Path(tmp) / 'memory.db'}",
                               index_dir=Path(tmp) / "index") as mm:
        mm.remember_many("bench-user", texts)
        mm.embedder.embed(queries)  # cached: recalls below make no model call

        def one(mode: str, q: str) -> float:
            telemetry.set_enabled(not mode.startswith("disabled"))
            start = time.perf_counter()
            mm.recall("bench-user", q, k=5, record_use=False)
            took = time.perf_counter() - start
            samples[mode].append(took)
            return took

        def measure(mode: str) -> None:
            for n, q in enumerate(queries):  # back to back, the order alternating
                if n % 2:
                    first[mode].append(one(mode, q) - one("disabled", q))
                else:
                    base = one("disabled", q)
                    second[mode].append(one(mode, q) - base)

        for q in queries[:10]:
            mm.recall("bench-user", q, k=5, record_use=False)
        for _ in range(rounds):  # the A/A control first: what the pairing cannot resolve
            measure("disabled_again")
            measure("api_no_provider")
        trace.set_tracer_provider(provider)  # once per process: the SDK rounds come last
        telemetry.set_enabled(True)
        span_ns["sdk_recording"] = min(per_span_ns(n_spans // 10) for _ in range(3))
        for _ in range(rounds):
            measure("sdk_recording")
        telemetry.set_enabled(True)

    recall = {m: percentiles(s) for m, s in samples.items()}
    base = statistics.fmean(samples["disabled"]) * 1e9
    median_recall = statistics.median(samples["disabled"])
    recall_delta = {}
    for m in first:
        delta = (statistics.median(first[m]) + statistics.median(second[m])) / 2
        recall_delta[m] = {"us": round(delta * 1e6, 1),
                           "pct_of_median_recall": round(100 * delta / median_recall, 3),
                           "pairs": len(first[m]) + len(second[m])}
    write_result("telemetry", {
        "what": "cost of one memstrata span (open, 4 attributes, close) and of recall(k=5) "
                f"on {n_records} LoCoMo sentences, SQLite, query embeddings cached",
        "span_ns": {k: round(v, 1) for k, v in span_ns.items()},
        "recall": recall,
        "recall_paired_delta_vs_disabled": recall_delta,
        "spans_per_recall": 2,
        "overhead_of_recall_pct": {
            m: round(100 * 2 * span_ns[m] / base, 4)
            for m in ("missing_extra", "disabled", "api_no_provider", "sdk_recording")},
        "note": "overhead_of_recall_pct = 2 spans (recall + its embedding call) x span_ns / "
                "mean recall time with telemetry disabled. recall_paired_delta_vs_disabled: "
                "each query recalled with the mode and with telemetry disabled back to back "
                "(order alternating), the mean of the medians of the differences with the mode "
                "first and second; disabled_again is the A/A control (disabled against "
                "disabled): its delta is the noise floor of this pairing; the recall rows carry "
                "the machine's noise (ms), far above the span cost (us)",
    })


if __name__ == "__main__":
    main()
