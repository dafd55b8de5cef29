"""The agent kernel: LLM client, governed tools, goal + task table, hybrid planner,
memory-fed context builder, and the audited loop. See ``docs/agent.md``."""

from memstrata.agent.agent import Agent, AgentSettings, RunResult
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
from memstrata.agent.goal import Goal, SubtaskSpec, TaskState
from memstrata.agent.memory_view import MemoryView
from memstrata.agent.planner import PlanTemplate
from memstrata.agent.steps import LogEntry
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
from memstrata.llm import ChatResult, LLMClient, OpenAIClient, Retry, Timeouts, Usage

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
