"""Test support shipped with memstrata (used by its own tests and by users' tests).

* :class:`PostgresServer` - a throwaway PostgreSQL cluster from the installed binaries;
* :class:`OpenAICompatServer` / :class:`Reply` - a real HTTP server on 127.0.0.1
  speaking the OpenAI wire format, with scripted replies;
* :class:`ScriptedLLM` (+ ``say``/``call``/``calls``/``plan``/``fill``) - a scripted
  model at the LLM seam, and ``forbid_model_requests`` / ``allow_model_requests``,
  the switch that makes any unplanned real model call fail.
"""

from memstrata.testing.openai_server import ChatEvent, OpenAICompatServer, Reply, approx_tokens
from memstrata.testing.postgres import PostgresServer, find_pg_bin
from memstrata.testing.scripted import (
    ScriptedLLM,
    ScriptedRequest,
    allow_model_requests,
    call,
    calls,
    fill,
    forbid_model_requests,
    plan,
    say,
)

__all__ = [
    "ChatEvent",
    "OpenAICompatServer",
    "PostgresServer",
    "Reply",
    "ScriptedLLM",
    "ScriptedRequest",
    "allow_model_requests",
    "approx_tokens",
    "call",
    "calls",
    "fill",
    "find_pg_bin",
    "forbid_model_requests",
    "plan",
    "say",
]
