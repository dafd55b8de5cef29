"""The language-model seam: one small protocol, the OpenAI-compatible client and
the call log.

Core, below every other package: the agent and the consolidation jobs both
reach the model through :class:`LLMClient`, and both log each call through
:class:`RecordingModel` into one table (``agent_llm_calls``), which
``forget_user`` erases with the rest of a user's data.
"""

from memstrata.llm._calls import CallRow, RecordingModel, list_calls, llm_calls
from memstrata.llm._client import (
    DEFAULT_RETRY,
    DEFAULT_TIMEOUTS,
    CallRecord,
    ChatResult,
    LLMClient,
    Message,
    OpenAIClient,
    Retry,
    Timeouts,
    ToolCall,
    Usage,
    model_requests_allowed,
    set_model_requests_allowed,
)
from memstrata.llm._limits import RateLimit, RateLimiter, token_upper_bound

__all__ = [
    "DEFAULT_RETRY",
    "DEFAULT_TIMEOUTS",
    "CallRecord",
    "CallRow",
    "ChatResult",
    "LLMClient",
    "Message",
    "OpenAIClient",
    "RateLimit",
    "RateLimiter",
    "RecordingModel",
    "Retry",
    "Timeouts",
    "ToolCall",
    "Usage",
    "list_calls",
    "llm_calls",
    "model_requests_allowed",
    "set_model_requests_allowed",
    "token_upper_bound",
]
