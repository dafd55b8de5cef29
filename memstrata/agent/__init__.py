"""The agent kernel: LLM client, governed tools, goal + task table, hybrid planner,
memory-fed context builder, and the audited loop. See ``docs/agent.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memstrata._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from memstrata.agent.agent import (
        Agent,
        AgentSettings,
        RunResult,
    )
    from memstrata.agent.context import (
        BuiltContext,
        CharCounter,
        ContextBuilder,
        ContextSettings,
        TokenCounter,
    )
    from memstrata.agent.errors import (
        ContextBudgetExceeded,
        MalformedOutputError,
        ReplanLimitExceeded,
        RunError,
        StepLimitExceeded,
        TokenBudgetExceeded,
        ToolCrashError,
        UsageError,
    )
    from memstrata.agent.goal import (
        Goal,
        SubtaskSpec,
        TaskState,
    )
    from memstrata.agent.memory_view import (
        MemoryView,
    )
    from memstrata.agent.planner import (
        PlanTemplate,
    )
    from memstrata.agent.steps import (
        LogEntry,
    )
    from memstrata.agent.tools import (
        Grounded,
        ModelRetry,
        Risk,
        RunContext,
        Tool,
        ToolError,
        ToolResult,
        tool,
    )
    from memstrata.agent.toolsets import (
        Approval,
        ApprovalRequest,
        BreakerPolicy,
        CachingToolset,
        FunctionToolset,
        RetryBackoff,
        RiskGate,
        Toolset,
    )
    from memstrata.llm import (
        ChatResult,
        LLMClient,
        OpenAIClient,
        Retry,
        Timeouts,
        Usage,
    )

#: where each name lives: imported on first use, so the command line (``memstrata
#: --help``) and the modules that need one name do not import the whole package
_WHERE = {
    "Agent": "memstrata.agent.agent",
    "AgentSettings": "memstrata.agent.agent",
    "RunResult": "memstrata.agent.agent",
    "BuiltContext": "memstrata.agent.context",
    "CharCounter": "memstrata.agent.context",
    "ContextBuilder": "memstrata.agent.context",
    "ContextSettings": "memstrata.agent.context",
    "TokenCounter": "memstrata.agent.context",
    "ContextBudgetExceeded": "memstrata.agent.errors",
    "MalformedOutputError": "memstrata.agent.errors",
    "ReplanLimitExceeded": "memstrata.agent.errors",
    "RunError": "memstrata.agent.errors",
    "StepLimitExceeded": "memstrata.agent.errors",
    "TokenBudgetExceeded": "memstrata.agent.errors",
    "ToolCrashError": "memstrata.agent.errors",
    "UsageError": "memstrata.agent.errors",
    "Goal": "memstrata.agent.goal",
    "SubtaskSpec": "memstrata.agent.goal",
    "TaskState": "memstrata.agent.goal",
    "MemoryView": "memstrata.agent.memory_view",
    "PlanTemplate": "memstrata.agent.planner",
    "LogEntry": "memstrata.agent.steps",
    "Grounded": "memstrata.agent.tools",
    "ModelRetry": "memstrata.agent.tools",
    "Risk": "memstrata.agent.tools",
    "RunContext": "memstrata.agent.tools",
    "Tool": "memstrata.agent.tools",
    "ToolError": "memstrata.agent.tools",
    "ToolResult": "memstrata.agent.tools",
    "tool": "memstrata.agent.tools",
    "Approval": "memstrata.agent.toolsets",
    "ApprovalRequest": "memstrata.agent.toolsets",
    "BreakerPolicy": "memstrata.agent.toolsets",
    "CachingToolset": "memstrata.agent.toolsets",
    "FunctionToolset": "memstrata.agent.toolsets",
    "RetryBackoff": "memstrata.agent.toolsets",
    "RiskGate": "memstrata.agent.toolsets",
    "Toolset": "memstrata.agent.toolsets",
    "ChatResult": "memstrata.llm",
    "LLMClient": "memstrata.llm",
    "OpenAIClient": "memstrata.llm",
    "Retry": "memstrata.llm",
    "Timeouts": "memstrata.llm",
    "Usage": "memstrata.llm",
}

__all__ = [
    "Agent",
    "AgentSettings",
    "Approval",
    "ApprovalRequest",
    "BreakerPolicy",
    "BuiltContext",
    "CachingToolset",
    "CharCounter",
    "ChatResult",
    "ContextBudgetExceeded",
    "ContextBuilder",
    "ContextSettings",
    "FunctionToolset",
    "Goal",
    "Grounded",
    "LLMClient",
    "LogEntry",
    "MalformedOutputError",
    "MemoryView",
    "ModelRetry",
    "OpenAIClient",
    "PlanTemplate",
    "ReplanLimitExceeded",
    "Retry",
    "RetryBackoff",
    "Risk",
    "RiskGate",
    "RunContext",
    "RunError",
    "RunResult",
    "StepLimitExceeded",
    "SubtaskSpec",
    "TaskState",
    "Timeouts",
    "TokenBudgetExceeded",
    "TokenCounter",
    "Tool",
    "ToolCrashError",
    "ToolError",
    "ToolResult",
    "Toolset",
    "Usage",
    "UsageError",
    "tool",
]


__getattr__ = _lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(__all__)
