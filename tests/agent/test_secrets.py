"""Secrets are not persisted: SecretStr fields and secret-named arguments (api_key,
password, token, secret, authorization; nested too) are redacted in the steps, the audit
trail and the model-call log. The whole database is searched for the values."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr
from sqlalchemy import MetaData, select

from memstrata import MemoryManager
from memstrata.agent import Agent, AgentSettings, CharCounter, RunContext, tool
from memstrata.testing import ScriptedLLM, call, calls, plan, say

KEY, TOKEN, BEARER, PIN = "sk-LIVE-4f9c1d77", "tok-SECRET-7781", "hdr-SECRET-9912", "pin-SECRET-31"
SECRETS = (KEY, TOKEN, BEARER, PIN)
sent: list[tuple[str, str]] = []


@tool(risk="L2", cache=False)
def call_api(ctx: RunContext[None], endpoint: str, api_key: str, pin: SecretStr,
             headers: dict[str, Any]) -> dict[str, str]:
    """Call the partner API.

    Args:
        endpoint: Path to call.
        api_key: The partner key.
        pin: The account PIN.
        headers: Extra HTTP headers.
    """
    sent.append((api_key, pin.get_secret_value()))
    return {"status": "ok", "endpoint": endpoint}


def _every_value(manager: MemoryManager) -> str:
    meta = MetaData()
    out: list[str] = []
    with manager.db.read() as conn:
        meta.reflect(bind=conn)
        for table in meta.sorted_tables:
            for row in conn.execute(select(table)):
                out += [repr(v) for v in row]
    return "\n".join(out)


def test_no_secret_value_anywhere_in_the_database(sqlite_manager: MemoryManager):
    args = {"endpoint": "/refund", "api_key": KEY, "pin": PIN,
            "headers": {"Authorization": f"Bearer {BEARER}", "X-Trace": "t1"},
            }
    bad = {**args, "endpoint": 42, "password": TOKEN}  # invalid: recorded raw
    model = ScriptedLLM(
        plan([("Call the API", "c1", "call_api", {"api_key": KEY})]),
        calls([("call_api", bad)], thought="first try"),
        call("call_api", args, thought="fixed"),
        call("call_api", {**args, "endpoint": "/again"}, thought="denied one"),
        call("call_api", f'{{"api_key": "{KEY}", "endpoint": ', thought="malformed"),
        say("Called."))
    answers = iter([True, "no"])
    agent = Agent(model, memory=sqlite_manager, tools=[call_api], token_counter=CharCounter(),
                  confirm=lambda r: next(answers),
                  settings=AgentSettings(detect_drift=False, failures_before_replan=9))
    r = agent.run("Call the partner API", user="u1")
    assert r.status == "done" and sent == [(KEY, PIN)]  # the tool got the real values
    dump = _every_value(sqlite_manager)
    assert "[redacted]" in dump and "X-Trace" in dump
    for secret in SECRETS:
        assert secret not in dump, (secret, [line for line in dump.splitlines()
                                             if secret in line][:3])
