"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest

from memstrata.agent import OpenAIClient, Retry, Timeouts
from memstrata.errors import (
    InvalidSettingError,
    LLMAuthError,
    LLMRateLimitError,
    LLMResponseError,
    LLMTimeoutError,
    LLMUnavailableError,
    UnplannedModelCallError,
)
from memstrata.llm import ToolCall
from memstrata.testing import OpenAICompatServer, Reply, allow_model_requests

FAST = Retry(max_attempts=3, base_delay=0.01, max_delay=0.05)
HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server():
    with OpenAICompatServer() as s, allow_model_requests():
        yield s


def client(server: OpenAICompatServer, **kw) -> OpenAIClient:
    kw.setdefault("retry", FAST)
    kw.setdefault("timeouts", Timeouts(connect=2, read=2))
    return OpenAIClient(model="m", base_url=server.base_url, **kw)


def test_tool_calls_and_usage_come_back(server):
    server.push(Reply.tool_calls([("query_order", {"order_id": "A1"})], prompt_tokens=31,
                                 completion_tokens=7))
    tools = [{"type": "function", "function": {"name": "query_order", "parameters": {}}}]
    with client(server) as c:
        result = c.chat(HI, tools=tools)
    assert result.tool_calls[0].name == "query_order"
    assert result.tool_calls[0].parsed_arguments() == {"order_id": "A1"}
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (31, 7)
    assert result.attempts == 1
    assert server.chat_requests()[0]["tools"][0]["function"]["name"] == "query_order"


def test_retriable_errors_are_retried_then_succeed(server):
    server.push(Reply.error(503, "busy"), Reply.error(429, "slow down"), Reply.text("ok"))
    result = client(server).chat(HI)
    assert result.content == "ok" and result.attempts == 3
    assert len(server.chat_requests()) == 3


def test_retry_budget_is_bounded_then_gives_up(server):
    server.push(*[Reply.error(500, "down")] * 5)
    with pytest.raises(LLMUnavailableError, match="gave up after 3 attempts"):
        client(server).chat(HI)
    assert len(server.chat_requests()) == 3
    assert server.pending == 2


def test_rate_limit_after_budget_is_typed(server):
    server.push(*[Reply.error(429, "slow", retry_after=0.01)] * 3)
    with pytest.raises(LLMRateLimitError):
        client(server).chat(HI)


def test_client_errors_are_not_retried(server):
    server.push(Reply.error(400, "bad request"), Reply.text("never"))
    with pytest.raises(LLMResponseError):
        client(server).chat(HI)
    assert len(server.chat_requests()) == 1


def test_bad_key_is_an_auth_error_without_retry():
    with OpenAICompatServer(api_key="right") as s, allow_model_requests():
        with pytest.raises(LLMAuthError):
            OpenAIClient(model="m", base_url=s.base_url, api_key="wrong", retry=FAST).chat(HI)
        assert len(s.chat_requests()) == 1


def test_read_timeout_is_retried_then_typed(server):
    server.push(*[Reply.text("late", delay=1.0)] * 2)
    c = client(server, timeouts=Timeouts(connect=1, read=0.2),
               retry=Retry(max_attempts=2, base_delay=0.01, max_delay=0.01))
    with pytest.raises(LLMTimeoutError):
        c.chat(HI)


def test_malformed_body_is_a_response_error(server):
    server.push(Reply.malformed(b"{not json"))
    with pytest.raises(LLMResponseError):
        client(server).chat(HI)


def test_malformed_tool_arguments_are_reported_by_the_call(server):
    server.push(Reply.tool_calls([("query_order", '{"order_id": ')]))
    result = client(server).chat(HI)
    call: ToolCall = result.tool_calls[0]
    with pytest.raises(LLMResponseError, match="malformed JSON"):
        call.parsed_arguments()


def test_unreachable_endpoint_names_the_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connection refused
        url = f"http://127.0.0.1:{port}/v1"
        with allow_model_requests(), pytest.raises(LLMUnavailableError) as info:
            OpenAIClient(model="m", base_url=url, retry=FAST).chat(HI)
    assert url in str(info.value) and "gave up after 3 attempts" in str(info.value)


def test_the_switch_blocks_real_calls_before_any_request():
    with OpenAICompatServer() as s:
        s.push(Reply.text("should not be used"))
        with pytest.raises(UnplannedModelCallError):
            OpenAIClient(model="m", base_url=s.base_url).chat(HI)
        assert s.chat_requests() == []


def test_bad_settings_are_rejected():
    with pytest.raises(InvalidSettingError):
        Retry(max_attempts=0)
    with pytest.raises(InvalidSettingError):
        Timeouts(read=0)
    with pytest.raises(InvalidSettingError):
        OpenAIClient.from_env({})
