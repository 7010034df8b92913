"""The agent room: what runs the chapter's adapter in a loop, beyond the chapter itself.

The blog chapter stops at ``ModelResponse``: one call, one checked action. A working agent
also has to run the tool the action names, feed the ``ToolResult`` back and ask again. That
loop (``loop.py``) and the two demo tools it runs (``workspace_tools.py``) live here.

What this room may import: the chapter's modules at the top of ``codeagent_lite`` and the
standard library, plus pydantic for the tools' argument models. Never ``providers`` or
``workbook``: the loop talks to any ``ModelAdapter``, whoever built it.
"""

from .loop import (
    DEFAULT_BUDGET,
    DEFAULT_SYSTEM_PROMPT,
    MAX_TOOL_RESULT_CHARS,
    ActionStep,
    ProviderErrorStep,
    RejectionStep,
    RepeatedCallIdStep,
    Step,
    StepKind,
    StopReason,
    ToolResultStep,
    Transcript,
    correction_message,
    run_agent,
    run_tool,
)
from .workspace_tools import Tool, ToolError, list_files_tool, read_file_tool, resolve_in_workspace, workspace_tools

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_SYSTEM_PROMPT",
    "MAX_TOOL_RESULT_CHARS",
    "ActionStep",
    "ProviderErrorStep",
    "RejectionStep",
    "RepeatedCallIdStep",
    "Step",
    "StepKind",
    "StopReason",
    "Tool",
    "ToolError",
    "ToolResultStep",
    "Transcript",
    "correction_message",
    "list_files_tool",
    "read_file_tool",
    "resolve_in_workspace",
    "run_agent",
    "run_tool",
    "workspace_tools",
]
