"""OpenTelemetry spans for memstrata's operations (optional extra ``otel``).

Filled in by the telemetry work of issue 14; the module exists so that the import
contracts can place it in the core layer.
"""

from __future__ import annotations

__all__: list[str] = []
