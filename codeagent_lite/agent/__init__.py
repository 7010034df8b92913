"""The agent room: the loop that runs the chapter's adapter, and two demo tools, beyond the chapter.

It may import the chapter's modules, the standard library and pydantic (the tools' arguments), never ``providers``
or ``workbook``: the loop talks to any ``ModelAdapter``, whoever built it.
"""

from .loop import StopReason, Transcript, run_agent, run_tool
from .workspace_tools import Tool, ToolError, workspace_tools

__all__ = ["StopReason", "Tool", "ToolError", "Transcript", "run_agent", "run_tool", "workspace_tools"]
