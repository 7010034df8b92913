"""The agent loop and its tools at the edges: tools that end the program, paths with a trailing
slash, and file names that look like the listing's own marks.

Each regression is an attack of issue 18; the properties then try the class: any way a tool
may end the program, any way a path may end in a folder's spelling, any set of names in a
folder, whose listing must read back as exactly those names and kinds.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent_lite import JsonTextModelAdapter, ScriptedProvider, ToolResult, ToolSpec
from codeagent_lite.agent.loop import StopReason, ToolResultStep, run_agent
from codeagent_lite.agent.workspace_tools import Tool, ToolError, list_files_tool, read_file_tool
from codeagent_lite.workbook.transcript_view import render_transcript


def call(call_id: str, tool_name: str, **arguments: Any) -> str:
    return json.dumps({"type": "tool_call", "call_id": call_id, "tool_name": tool_name, "arguments": arguments})


def final(content: str) -> str:
    return json.dumps({"type": "final_answer", "content": content})


def run(replies: list[str], tools: tuple[Tool, ...]) -> Any:
    return run_agent(JsonTextModelAdapter(ScriptedProvider(replies)), tools, "Do it.")


def tool_raising(error: BaseException) -> Tool:
    def raising(arguments: Mapping[str, Any]) -> str:
        raise error

    return Tool(spec=ToolSpec(name="quitter", description="A test tool."), run=raising)


def results(transcript: Any) -> list[Any]:
    return [step.result for step in transcript.steps if isinstance(step, ToolResultStep)]


# --------------------------------------------------------------------------- tools that end the program


class CustomBaseException(BaseException):
    pass


def test_a_tool_calling_sys_exit_does_not_end_the_host() -> None:
    def exiting(arguments: Mapping[str, Any]) -> str:
        sys.exit(3)

    tool = Tool(spec=ToolSpec(name="quitter", description="A test tool."), run=exiting)
    transcript = run([call("c1", "quitter"), final("still here")], (tool,))
    assert transcript.stop_reason is StopReason.FINAL_ANSWER and transcript.final_answer == "still here"
    (result,) = results(transcript)
    assert result.is_error and "tried to end the program: SystemExit: 3" in result.content


@pytest.mark.parametrize(
    "error", [SystemExit(0), SystemExit("bye"), GeneratorExit(), CustomBaseException("x")], ids=repr
)
def test_any_base_exception_from_a_tool_is_an_error_result(error: BaseException) -> None:
    transcript = run([call("c1", "quitter"), final("ok")], (tool_raising(error),))
    assert transcript.stop_reason is StopReason.FINAL_ANSWER
    (result,) = results(transcript)
    assert result.is_error and type(error).__name__ in result.content


def test_a_keyboard_interrupt_in_a_tool_stops_the_run_not_the_host() -> None:
    transcript = run([call("c1", "quitter"), final("never reached")], (tool_raising(KeyboardInterrupt()),))
    assert transcript.stop_reason is StopReason.INTERRUPTED
    assert transcript.final_answer is None and transcript.model_calls == 1
    (result,) = results(transcript)
    assert result.is_error and "interrupted (KeyboardInterrupt)" in result.content
    assert "stopped: interrupted" in render_transcript(transcript, language="en")
    assert "（工具 'quitter' 被中断（KeyboardInterrupt））" in render_transcript(transcript, language="zh")


def test_ctrl_c_while_the_model_is_asked_stops_the_run_with_what_it_spent() -> None:
    class InterruptedSecondCall:
        def __init__(self) -> None:
            self.inner = JsonTextModelAdapter(ScriptedProvider([call("c1", "quitter")]))

        def complete(self, history: Any, tools: Any, budget: Any) -> Any:
            if any(isinstance(item, ToolResult) for item in history):
                raise KeyboardInterrupt
            return self.inner.complete(history, tools, budget)

    adapter = InterruptedSecondCall()
    transcript = run_agent(adapter, [tool_raising(ValueError("no"))], "Do it.")
    assert transcript.stop_reason is StopReason.INTERRUPTED and transcript.model_calls == 1
    assert transcript.stop_detail == "model call 2 was interrupted (KeyboardInterrupt)"
    assert transcript.usage == transcript.steps[0].usage and transcript.usage.total_tokens > 0  # the first call's cost
    assert "stopped: interrupted" in render_transcript(transcript, language="en")
    assert (transcript.stop_cause.code, dict(transcript.stop_cause.params)) == ("model_call_interrupted", {"call": 2})
    assert "第 2 次模型调用被中断（KeyboardInterrupt）" in render_transcript(transcript, language="zh")


# --------------------------------------------------------------------------- a trailing slash


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "docs").mkdir(parents=True)
    (root / "notes.md").write_text("# notes\n", encoding="utf-8")
    (root / "docs" / "a.txt").write_text("a\n", encoding="utf-8")
    os.symlink("notes.md", root / "link.md")
    return root


def test_a_file_with_a_trailing_slash_is_not_read(workspace: Path) -> None:
    with pytest.raises(ToolError, match="goes through a file as if it were a folder"):
        read_file_tool(workspace).run({"path": "notes.md/"})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(["notes.md", "link.md", "docs/a.txt", "./notes.md"]),
    ending=st.sampled_from(["/", "/.", "//", "/./", "/./."]),
)
def test_any_folder_ending_on_a_file_is_refused_like_posix_open(workspace: Path, name: str, ending: str) -> None:
    with pytest.raises(OSError):  # the oracle: what the system itself says
        open(os.path.join(workspace, name + ending)).close()  # a str: pathlib would drop the slash
    for tool in (read_file_tool(workspace), list_files_tool(workspace)):
        with pytest.raises(ToolError):
            tool.run({"path": name + ending})


@pytest.mark.parametrize("path", ["docs/", "docs/.", "./docs//", "."])
def test_a_folder_with_a_trailing_slash_is_still_listed(workspace: Path, path: str) -> None:
    listing = list_files_tool(workspace).run({"path": path})
    assert "a.txt" in listing or "notes.md" in listing


# --------------------------------------------------------------------------- names that look like marks


def test_a_file_named_x_at_does_not_look_like_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "x@").write_text("a file\n", encoding="utf-8")
    (tmp_path / "y").write_text("target\n", encoding="utf-8")
    os.symlink("y", tmp_path / "x")
    lines = list_files_tool(tmp_path).run({"path": "."}).splitlines()
    assert "'x@'" in lines and "x@" in lines and "y" in lines


def read_back(listing: str) -> set[tuple[str, str]]:
    """The (name, kind) pairs a reader gets from a listing by its documented rules, written independently."""
    entries = set()
    for line in listing.splitlines():
        kind = {"@": "link", "/": "folder"}.get(line[-1], "file")
        text = line[:-1] if kind != "file" else line
        name = ast.literal_eval(text) if text.startswith(("'", '"')) else text
        entries.add((name, kind))
    return entries


_NAME = st.text(st.sampled_from("ab@'\" .-_é\n\t中"), min_size=1, max_size=6).filter(
    lambda name: name not in (".", "..")
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.dictionaries(_NAME, st.sampled_from(["file", "folder", "link"]), min_size=1, max_size=6))
def test_any_listing_reads_back_as_exactly_its_entries(
    tmp_path_factory: pytest.TempPathFactory, entries: dict[str, str]
) -> None:
    folder = tmp_path_factory.mktemp("names")
    for name, kind in entries.items():
        if kind == "file":
            (folder / name).write_text("x", encoding="utf-8")
        elif kind == "folder":
            (folder / name).mkdir()
        else:
            os.symlink("nowhere", folder / name)
    assert read_back(list_files_tool(folder).run({"path": "."})) == set(entries.items())
