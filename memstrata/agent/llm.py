"""The agent's view of the language-model seam, which lives in the core
package :mod:`memstrata.llm`; these are the same objects, re-exported so
``memstrata.agent.llm`` keeps working."""

from memstrata.llm import (
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

__all__ = [
    "DEFAULT_RETRY",
    "DEFAULT_TIMEOUTS",
    "CallRecord",
    "ChatResult",
    "LLMClient",
    "Message",
    "OpenAIClient",
    "Retry",
    "Timeouts",
    "ToolCall",
    "Usage",
    "model_requests_allowed",
    "set_model_requests_allowed",
]
