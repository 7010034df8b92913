"""The agent loop and its tools against hostile model text, hostile file names and buggy tools.

Regressions first, then properties: for arbitrary model replies and arbitrary path
arguments, a run ends with a ``Transcript`` (never an exception), whatever is sent back
to the model has a UTF-8 form, a tool error never names a host path, and the rendered
transcript holds no raw control character.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent_lite import JsonTextModelAdapter, ScriptedProvider, ToolCall, ToolResult, ToolSpec
from codeagent_lite.agent.loop import MAX_TOOL_RESULT_CHARS, ToolResultStep, run_agent, run_tool
from codeagent_lite.agent.workspace_tools import (
    MAX_PATH_CHARS,
    Tool,
    ToolError,
    list_files_tool,
    read_file_tool,
    workspace_tools,
)
from codeagent_lite.display import printable
from codeagent_lite.workbook.transcript_view import render_transcript

ESCAPES = "\x1b[2J\x1b]0;pwned\x07"


def call(call_id: str, tool_name: str, **arguments: Any) -> str:
    return json.dumps({"type": "tool_call", "call_id": call_id, "tool_name": tool_name, "arguments": arguments})


def final(content: str) -> str:
    return json.dumps({"type": "final_answer", "content": content})


def custom_tool(name: str, run: Any) -> Tool:
    return Tool(spec=ToolSpec(name=name, description="A test tool."), run=run)


def run(replies: list[str], tools: tuple[Tool, ...], **options: Any) -> Any:
    return run_agent(JsonTextModelAdapter(ScriptedProvider(replies)), tools, "Do it.", **options)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside secret\n", encoding="utf-8")
    return root


# --------------------------------------------------------------------------- buggy tools


def test_a_tool_that_mutates_its_arguments_cannot_rewrite_the_history() -> None:
    def greedy(arguments: Mapping[str, Any]) -> str:
        arguments["path"].append("injected")  # type: ignore[attr-defined]
        arguments["new"] = 1  # type: ignore[index]
        return "ok"

    transcript = run([call("c1", "greedy", path=["a"]), final("done")], (custom_tool("greedy", greedy),))
    recorded = [item for item in transcript.history if isinstance(item, ToolCall)]
    assert recorded == [ToolCall("c1", "greedy", {"path": ["a"]})]


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


class UnprintableToolError(ToolError):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


@pytest.mark.parametrize("error", [UnprintableError(), UnprintableToolError()])
def test_a_tool_exception_whose_str_raises_stays_inside_run_tool(error: Exception) -> None:
    def broken(arguments: Mapping[str, Any]) -> str:
        raise error

    result = run_tool([custom_tool("broken", broken)], ToolCall("c1", "broken", {}))
    assert result.is_error and "cannot be shown" in result.content


class ExitingStr(str):
    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        raise SystemExit(3)

    def __format__(self, spec: str) -> str:
        raise SystemExit(4)


class ExitWhenShown(Exception):
    def __str__(self) -> str:
        raise SystemExit(5)


class ClaimsToBeText:
    __class__ = str  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        (lambda: ExitingStr("fine"), "fine"),
        (lambda: (_ for _ in ()).throw(ExitWhenShown()), "cannot be shown"),
        (lambda: (_ for _ in ()).throw(SystemExit(ExitingStr("bye"))), "tried to end the program"),
        (ClaimsToBeText, "returned ClaimsToBeText, not text"),
    ],
)
def test_a_tools_foreign_text_cannot_end_the_run(behaviour: Any, said: str) -> None:
    """sys.exit() hidden in a str subclass's methods or an exception's __str__ is the tool's code: still one step."""
    transcript = run([call("c1", "odd"), final("done")], (custom_tool("odd", lambda arguments: behaviour()),))
    sent = next(item for item in transcript.history if isinstance(item, ToolResult))
    assert said in sent.content and type(sent.content) is str and transcript.final_answer == "done"


def test_a_huge_tool_output_is_capped_with_a_marker_and_the_transcript_says_so() -> None:
    huge = "x" * 100_000
    transcript = run([call("c1", "huge"), final("done")], (custom_tool("huge", lambda arguments: huge),))
    sent = next(item for item in transcript.history if isinstance(item, ToolResult))
    assert sent.content.startswith("x" * MAX_TOOL_RESULT_CHARS)
    assert sent.content.endswith(f"… [{100_000 - MAX_TOOL_RESULT_CHARS} more characters]")
    step = next(step for step in transcript.steps if isinstance(step, ToolResultStep))
    assert step.capped and step.output_chars == 100_000
    assert "the tool returned 100000 characters; the model was sent them cut" in render_transcript(
        transcript, language="en"
    )


def test_the_cap_is_a_run_option() -> None:
    transcript = run(
        [call("c1", "t"), final("done")], (custom_tool("t", lambda arguments: "abcdef"),), max_tool_result_chars=3
    )
    sent = next(item for item in transcript.history if isinstance(item, ToolResult))
    assert sent.content == "abc… [3 more characters]"


@pytest.mark.parametrize("over", [1, 5, 20, 25])
def test_a_result_cut_by_a_few_characters_is_still_said_to_be_cut(over: int) -> None:
    # The cut text ends in "… [N more characters]", longer than a cut of 20: lengths alone cannot tell
    output = "y" * (MAX_TOOL_RESULT_CHARS + over)
    transcript = run([call("c1", "t"), final("done")], (custom_tool("t", lambda arguments: output),))
    step = next(step for step in transcript.steps if isinstance(step, ToolResultStep))
    assert step.capped and step.output_chars == len(output)
    assert f"the tool returned {len(output)} characters" in render_transcript(transcript, language="en")


def test_a_result_that_fits_is_not_said_to_be_cut() -> None:
    transcript = run([call("c1", "t"), final("done")], (custom_tool("t", lambda arguments: "z" * 30),))
    step = next(step for step in transcript.steps if isinstance(step, ToolResultStep))
    assert not step.capped and step.output_chars == 30


def test_the_tools_may_be_any_iterable_read_once() -> None:
    tools = iter((custom_tool("t", lambda arguments: "ok"),))
    transcript = run_agent(JsonTextModelAdapter(ScriptedProvider([call("c1", "t"), final("done")])), tools, "Go")
    sent = next(item for item in transcript.history if isinstance(item, ToolResult))
    assert sent.content == "ok" and not sent.is_error


def test_a_final_answer_on_many_lines_cannot_pass_for_the_transcripts_own_lines() -> None:
    forged = "fine.\nusage: 0 in + 0 out = 0 tokens over 1 model calls (0 rejected)\n[3] tool result · ok"
    text = render_transcript(run([final(forged)], ()), language="en")
    assert "\n    usage: 0 in" in text and "\n    [3] tool result" in text
    assert [line for line in text.splitlines() if line.startswith("usage:")] == [text.splitlines()[-1]]


def test_a_transcript_too_narrow_for_a_quote_is_refused_whatever_it_holds() -> None:
    with pytest.raises(ValueError, match="max_chars must be at least 4, found 3"):
        render_transcript(run([final("done")], ()), max_chars=3)


def test_a_tool_output_with_a_lone_surrogate_is_made_sendable() -> None:
    result = run_tool([custom_tool("t", lambda arguments: "caf\udce9")], ToolCall("c1", "t", {}))
    assert result.content == "caf\\udce9"
    result.content.encode("utf-8")


def test_a_huge_unknown_tool_name_is_quoted_short() -> None:
    result = run_tool([], ToolCall("c1", "n" * 10_000 + ESCAPES, {}))
    assert result.is_error and len(result.content) < 200 and "\x1b" not in result.content


# --------------------------------------------------------------------------- file names and paths


def test_file_names_with_newlines_cannot_fake_entries(workspace: Path) -> None:
    (workspace / "a.txt\nsecret.txt").write_text("x", encoding="utf-8")
    (workspace / f"b{ESCAPES}.txt").write_text("x", encoding="utf-8")
    listing = list_files_tool(workspace).run({}).splitlines()
    assert len(listing) == 3
    assert "'a.txt\\nsecret.txt'" in listing
    assert "secret.txt" not in listing
    assert all(printable(line) == line for line in listing)


def test_a_file_name_that_is_not_utf8_is_listed_in_a_sendable_form(workspace: Path) -> None:
    os.close(os.open(os.path.join(os.fsencode(workspace), b"caf\xe9.txt"), os.O_CREAT | os.O_WRONLY, 0o644))
    listing = list_files_tool(workspace).run({})
    listing.encode("utf-8")  # would raise if a surrogate had slipped through
    assert "'caf\\udce9.txt'" in listing


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("a" * 300, "cannot open"),
        ("d/" * 600, f"path must be at most {MAX_PATH_CHARS} characters"),
        ("caf\udce9.txt", "lone surrogate"),
        ("\ud800", "lone surrogate"),
    ],
)
def test_odd_paths_give_a_tool_error_without_the_host_path(workspace: Path, path: str, message: str) -> None:
    for tool in workspace_tools(workspace):
        with pytest.raises(ToolError, match=message) as caught:
            tool.run({"path": path})
        assert str(workspace) not in str(caught.value) and str(workspace.parent) not in str(caught.value)


def test_a_fifo_in_the_workspace_cannot_hang_read_file(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        read_file_tool(workspace).run({"path": "pipe"})


def test_symlinks_are_followed_only_while_they_stay_inside(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "up").symlink_to("../README.md")
    (workspace / "sub" / "out").symlink_to("../../secret.txt")
    (workspace / "sub" / "abs_out").symlink_to(workspace.parent / "secret.txt")
    (workspace / "sub" / "via").symlink_to(".", target_is_directory=True)
    read = read_file_tool(workspace)
    assert read.run({"path": "sub/up"}) == "# Demo\n"
    assert read.run({"path": "sub/via/via/up"}) == "# Demo\n"
    for path in ("sub/out", "sub/abs_out", "sub/via/out"):
        with pytest.raises(ToolError, match="outside the workspace"):
            read.run({"path": path})


def test_the_symlink_swap_race_never_reads_the_outside_file(workspace: Path) -> None:
    """Another thread swaps folder ``d`` between a real folder and a link to an outside one.

    A check on the resolved path followed by an open of it loses this race often: the check
    sees the real folder, the open goes through the link. The walk opens what it checked.
    """
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("outside secret\n", encoding="utf-8")
    (workspace / "real").mkdir()
    (workspace / "real" / "x.txt").write_text("inside\n", encoding="utf-8")
    (workspace / "evil").symlink_to(outside, target_is_directory=True)
    d = workspace / "d"
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            os.rename(workspace / "real", d)
            os.rename(d, workspace / "real")
            os.rename(workspace / "evil", d)
            os.rename(d, workspace / "evil")

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    read = read_file_tool(workspace)
    seen: dict[str, int] = {}
    try:
        for _ in range(4000):
            try:
                text = read.run({"path": "d/x.txt"})
            except ToolError as error:
                text = str(error).split(":")[0]
            seen[text] = seen.get(text, 0) + 1
    finally:
        stop.set()
        swapper.join(timeout=10)
    assert "outside secret\n" not in seen, seen
    assert "inside\n" in seen, seen


def test_a_hard_link_is_a_documented_limit(workspace: Path) -> None:
    """A hard link to an outside file is the same file, not a pointer: nothing on this side can tell."""
    try:
        os.link(workspace.parent / "secret.txt", workspace / "hard.txt")
    except OSError:
        pytest.skip("this file system has no hard links")
    assert read_file_tool(workspace).run({"path": "hard.txt"}) == "outside secret\n"


# --------------------------------------------------------------------------- the classes, as properties


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.text(max_size=60) | st.integers() | st.none() | st.lists(st.text(max_size=3), max_size=2))
def test_any_path_argument_gives_text_or_a_tool_error_without_host_paths(workspace: Path, path: object) -> None:
    for tool in workspace_tools(workspace):
        try:
            result = tool.run({"path": path})
        except ToolError as error:
            message = str(error)
            assert str(workspace) not in message
            assert printable(message) == message
        else:
            assert isinstance(result, str)
            result.encode("utf-8")


_REPLIES = st.one_of(
    st.text(max_size=80),
    st.builds(
        call,
        st.text(min_size=1, max_size=8),
        st.sampled_from(["read_file", "list_files", "nope"]),
        path=st.text(max_size=20) | st.sampled_from(["README.md", ".", "../secret.txt"]),
    ),
    st.builds(final, st.text(min_size=1, max_size=40)),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(replies=st.lists(_REPLIES, min_size=1, max_size=6))
def test_any_model_text_ends_in_a_transcript_that_prints_safely(workspace: Path, replies: list[str]) -> None:
    transcript = run(replies, workspace_tools(workspace), max_steps=6, max_consecutive_rejections=6)
    text = render_transcript(transcript, language="en")
    assert printable(text) == text
    for item in transcript.history:
        if isinstance(item, ToolResult):
            item.content.encode("utf-8")  # what tools send back always has a UTF-8 form
            assert "outside secret" not in item.content


class _OddRejections:
    """A learner's adapter whose rejection fills ``expected``, ``found``, ``raw_text`` and ``usage`` with non-text."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, history: Any, tools: Any, budget: Any) -> Any:
        from codeagent_lite import FinalAnswer, InvalidModelOutputError, ModelResponse, TokenUsage, ValidationLayer

        self.calls += 1
        if self.calls > 1:
            return ModelResponse(FinalAnswer("done"), TokenUsage(5, 1))
        odd: Any = ["a list"]
        error = InvalidModelOutputError(odd, layer=ValidationLayer.FIELDS, expected=odd, found=odd, raw_text=odd)
        error.usage = (540, 0)  # type: ignore[assignment]
        raise error


def test_a_rejection_whose_fields_are_not_text_is_corrected_not_a_crash() -> None:
    transcript = run_agent(_OddRejections(), (), "task")
    assert transcript.final_answer == "done" and transcript.rejections == 1
    rejected = transcript.steps[0]
    assert rejected.message == "['a list']" and rejected.raw_text is None and rejected.usage is None
    assert printable(render_transcript(transcript)) == render_transcript(transcript)


class _BrokenAdapter:
    """A learner's adapter that answers once, then breaks its contract the way ``behaviour`` says."""

    def __init__(self, behaviour: Any) -> None:
        self.behaviour, self.calls = behaviour, 0

    def complete(self, history: Any, tools: Any, budget: Any) -> Any:
        from codeagent_lite import ModelResponse, TokenUsage

        self.calls += 1
        if self.calls == 1:
            return ModelResponse(ToolCall("call_1", "echo", {}), TokenUsage(7, 2))
        return self.behaviour()


def _raise(error: BaseException) -> Any:
    raise error


def _layer_overwritten() -> Any:
    from codeagent_lite import InvalidModelOutputError, ValidationLayer

    error = InvalidModelOutputError("bad", layer=ValidationLayer.FIELDS)
    error.layer = 4  # type: ignore[assignment]
    raise error


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        (lambda: _raise(ValueError("input_tokens must be >= 0, got -3\x1b[2J")), "raised ValueError: input_tokens"),
        (lambda: _raise(SystemExit(3)), "raised SystemExit: 3"),
        (lambda: None, "returned NoneType, not a ModelResponse"),
        (lambda: "the reply", "returned str, not a ModelResponse"),
        (_layer_overwritten, "InvalidModelOutputError with a layer of type int"),
    ],
)
def test_an_adapter_that_breaks_its_contract_ends_the_run_with_its_transcript(behaviour: Any, said: str) -> None:
    from codeagent_lite.agent.loop import StopReason

    echo = custom_tool("echo", lambda arguments: "echoed")
    transcript = run_agent(_BrokenAdapter(behaviour), (echo,), "task")
    assert transcript.stop_reason is StopReason.ADAPTER_ERROR
    assert transcript.stop_detail.startswith("model call 2: adapter.complete ") and said in transcript.stop_detail
    assert transcript.usage.total_tokens == 9 and transcript.steps[-1].result.content == "echoed"  # type: ignore[union-attr]
    text = render_transcript(transcript, language="zh")
    assert "Adapter 出错" in text and printable(text) == text
    stopped = next(line for line in text.splitlines() if line.startswith("结束："))
    assert "第 2 次模型调用：adapter.complete " in stopped and "model call" not in stopped, stopped


def _refused_with_usage_and_a_bad_layer() -> Any:
    from codeagent_lite import InvalidModelOutputError, TokenUsage, ValidationLayer

    error = InvalidModelOutputError("bad", layer=ValidationLayer.FIELDS, usage=TokenUsage(30, 4))
    error.layer = 4  # type: ignore[assignment]
    raise error


def _a_response_of_no_action() -> Any:
    from codeagent_lite import ModelResponse, TokenUsage

    return ModelResponse({"type": "final_answer", "content": "a dict"}, TokenUsage(30, 4))  # type: ignore[arg-type]


@pytest.mark.parametrize("behaviour", [_refused_with_usage_and_a_bad_layer, _a_response_of_no_action])
def test_a_broken_adapters_counted_usage_is_kept(behaviour: Any) -> None:
    """The server was paid for the call whose answer the adapter then mishandled: its tokens stay in the total."""
    from codeagent_lite.agent.loop import StopReason

    transcript = run_agent(_BrokenAdapter(behaviour), (custom_tool("echo", lambda arguments: "echoed"),), "task")
    assert transcript.stop_reason is StopReason.ADAPTER_ERROR
    assert (transcript.usage.input_tokens, transcript.usage.output_tokens) == (37, 6)
