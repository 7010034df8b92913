"""Notebook 06's helpers: attempts, verdicts, the comparison table, failure costs, hidden paths.

Most tests use ``ScriptedProvider`` so they are fast and exact; one test (marked
``local_model``) runs the real Gemma model for the cut-off reply the notebook shows.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from local_model import requires_local_model, shared_server

from codeagent_lite import (
    JsonTextModelAdapter,
    Message,
    MessageRole,
    ProviderError,
    ProviderMessage,
    ProviderResponse,
    ScriptedProvider,
    ToolSpec,
    ValidationLayer,
    build_provider_messages,
    diagnose,
)
from codeagent_lite.agent import run_agent, workspace_tools
from codeagent_lite.display import display_width
from codeagent_lite.model_adapter import TokenUsage
from codeagent_lite.providers import GemmaProvider
from codeagent_lite.workbook.real_model_lab import (
    DEMO_FILES,
    RAW_PREFIX,
    Attempt,
    action_text,
    ask,
    comparison_table,
    failure_costs,
    finish_note,
    hide_folder,
    rate_cell,
    raw_line,
    render_attempt,
    seconds_cell,
    timing_table,
    verdict_text,
    write_demo_workspace,
)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

TOOL_CALL = '{"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", "arguments": {"path": "notes.txt"}}'
FINAL = '{"type": "final_answer", "content": "notes.txt has 3 lines."}'


class FixedProvider:
    """Answers every request with one fixed response (or raises), and records the requests."""

    def __init__(self, response: ProviderResponse | ProviderError) -> None:
        self.response = response
        self.requests: list[tuple[tuple[ProviderMessage, ...], int]] = []

    def complete(
        self, *, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec], max_output_tokens: int
    ) -> ProviderResponse:
        self.requests.append((tuple(messages), max_output_tokens))
        if isinstance(self.response, ProviderError):
            raise self.response
        return self.response


def test_ask_keeps_raw_text_finish_reason_usage_and_ladder() -> None:
    provider = FixedProvider(ProviderResponse('{"type": "final_answer", "content": "4', 30, 8, "length"))
    attempt = ask(provider, "Count the lines", (), label="free_text", max_output_tokens=8)
    assert provider.requests == [((ProviderMessage("user", "Count the lines"),), 8)]
    assert attempt.raw_text == '{"type": "final_answer", "content": "4'
    assert attempt.finish_reason == "length"
    assert attempt.usage is not None and (attempt.usage.input_tokens, attempt.usage.output_tokens) == (30, 8)
    assert attempt.verdict == "layer 1 (JSON syntax)"
    assert attempt.action == "—"
    assert "cut off" in (attempt.diagnosis.error.message if attempt.diagnosis and attempt.diagnosis.error else "")


def test_ask_turns_a_provider_error_into_an_attempt() -> None:
    attempt = ask(FixedProvider(ProviderError("connection refused")), "Hi", (), label="remote")
    assert attempt.error == "connection refused"
    assert attempt.verdict == "provider error"
    assert attempt.raw_text is None and attempt.usage is None
    assert "✘ provider error: connection refused" in render_attempt(attempt)


@pytest.mark.parametrize(
    ("text", "verdict", "action"),
    [
        (TOOL_CALL, "accepted", "read_file(path='notes.txt')"),
        (FINAL, "accepted", "final: 'notes.txt has 3 lines.'"),
        ("```json\n" + FINAL + "\n```", "layer 1 (JSON syntax)", "—"),
        ("[1]", "layer 2 (top-level object)", "—"),
        ('{"type": "tool_result"}', "layer 3 (action type)", "—"),
        ('{"type": "final_answer"}', "layer 4 (fields and types)", "—"),
    ],
)
def test_verdict_and_action_name_the_layer_and_the_action(text: str, verdict: str, action: str) -> None:
    diagnosis = diagnose(text)
    assert verdict_text(diagnosis) == verdict
    assert action_text(diagnosis) == action


def test_action_text_is_shortened() -> None:
    long_answer = '{"type": "final_answer", "content": "' + "x" * 100 + '"}'
    shown = action_text(diagnose(long_answer), max_chars=20)
    assert len(shown) == 20 and shown.endswith("…")


def test_raw_line_is_one_prefixed_line() -> None:
    line = raw_line(' {"a":\n1}')
    assert line == RAW_PREFIX + repr(' {"a":\n1}')
    assert "\n" not in line
    assert raw_line(None) == RAW_PREFIX + "(no reply)"
    assert raw_line("y" * 500, max_chars=50).endswith("more characters]")


def test_finish_note_explains_length() -> None:
    cut = Attempt("t", "m", "{", "length", None, diagnose("{"))
    assert "max_output_tokens" in finish_note(cut)
    assert "ended the reply itself" in finish_note(Attempt("t", "m", FINAL, "stop", None, diagnose(FINAL)))
    assert "not reported" in finish_note(Attempt("t", "m", FINAL, None, None, diagnose(FINAL)))


def test_render_attempt_shows_raw_text_cost_and_ladder() -> None:
    attempt = ask(FixedProvider(ProviderResponse("[1]", 10, 2, "stop")), "Hi", (), label="schema")
    text = render_attempt(attempt)
    assert text.splitlines()[0] == "task: Hi  [schema]"
    assert RAW_PREFIX + "'[1]'" in text
    assert "10 in + 2 out = 12 tokens" in text
    assert "✘ layer 2" in text


def test_comparison_table_has_one_aligned_row_per_attempt() -> None:
    attempts = [
        ask(FixedProvider(ProviderResponse(TOOL_CALL, 5, 20, "stop")), "Read notes", (), label="free_text"),
        ask(FixedProvider(ProviderResponse("nope", 5, 1, "stop")), "Read notes", (), label="schema"),
    ]
    lines = comparison_table(attempts).splitlines()
    assert lines[0].split(" | ") == [
        "task      ",
        "mode     ",
        "verdict              ",
        "action                     ",
        "out",
    ]
    assert lines[2].split(" | ")[2:4] == ["accepted             ", "read_file(path='notes.txt')"]
    assert lines[3].split(" | ")[2].strip() == "layer 1 (JSON syntax)"
    assert len(lines) == 4
    assert len({line.index("|") for line in lines if "|" in line}) == 1


def test_failure_costs_count_rejected_calls(tmp_path: Path) -> None:
    write_demo_workspace(tmp_path)
    # A layer-1 failure, a repeated call_id refused by the loop, then success; each call has its own cost.
    provider = ScriptedProvider(
        [
            ProviderResponse("not json", 100, 5),
            ProviderResponse(TOOL_CALL, 110, 20),
            ProviderResponse(TOOL_CALL, 130, 20),
            ProviderResponse(FINAL, 150, 10),
        ]
    )
    transcript = run_agent(JsonTextModelAdapter(provider), workspace_tools(tmp_path), "Count the lines of notes.txt")
    text = failure_costs(transcript)
    lines = text.splitlines()
    assert lines[0].startswith("call 1: rejected by layer 1")
    assert lines[1].startswith("call 2: accepted")
    assert lines[2].startswith("call 3: rejected by the loop")
    assert lines[3].startswith("call 4: accepted")
    assert lines[0].endswith("100 in + 5 out = 105 tokens")
    assert lines[4] == "rejected calls cost 255 of 545 tokens (47%), over 2 of 4 calls"


def test_demo_workspace_is_written_and_confined(tmp_path: Path) -> None:
    root = write_demo_workspace(tmp_path)
    for relative, text in DEMO_FILES.items():
        assert (root / relative).read_text(encoding="utf-8") == text
    for bad in ("../escape.txt", "/abs.txt", "."):
        with pytest.raises(ValueError, match="inside the folder"):
            write_demo_workspace(tmp_path / "w", {bad: "x"})
    assert not (tmp_path / "escape.txt").exists()


def test_hide_folder_replaces_every_spelling(tmp_path: Path) -> None:
    link = tmp_path / "link"
    real = tmp_path / "real"
    real.mkdir()
    link.symlink_to(real)
    text = f"a {link}/x and {real}/y and {os.fspath(link)}"
    hidden = hide_folder(text, link)
    assert hidden == "a <workspace>/x and <workspace>/y and <workspace>"


@pytest.mark.local_model
@requires_local_model
def test_a_tiny_output_budget_cuts_the_real_reply_off_at_layer_1() -> None:
    provider = shared_server().provider("free_text")
    attempt = ask(
        provider,
        "Show me the file notes.txt.",
        [t.spec for t in workspace_tools(".")],
        label="free_text",
        max_output_tokens=6,
    )
    assert attempt.finish_reason == "length"
    assert attempt.usage is not None and attempt.usage.output_tokens == 6
    assert attempt.diagnosis is not None and attempt.diagnosis.rejected_by is ValidationLayer.JSON_SYNTAX
    assert "cut off" in render_attempt(attempt)


def test_task_playground_asks_the_chosen_mode_and_shows_raw_text_and_ladder() -> None:
    from codeagent_lite.workbook.real_model_lab import TaskPlayground

    free = FixedProvider(ProviderResponse("Sure! " + FINAL, 40, 9, "stop"))
    constrained = FixedProvider(ProviderResponse(TOOL_CALL, 40, 20, "stop"))
    playground = TaskPlayground({"free_text": free, "schema": constrained}, (), task="Count the lines")
    playground.mode.value = "schema"
    attempt = playground.run_once()
    assert constrained.requests and not free.requests
    assert attempt.verdict == "accepted" and playground.last_attempt is attempt
    assert playground.result.value.count('data-status="passed"') == 4
    playground.mode.value = "free_text"
    playground.task.value = "a <b> task"
    attempt = playground.run_once()
    assert free.requests[0][0] == (ProviderMessage("user", "a <b> task"),)
    assert attempt.verdict == "layer 1 (JSON syntax)"
    assert "Sure!" in playground.result.value
    assert 'data-layer="1" data-status="failed"' in playground.result.value
    assert playground._repr_mimebundle_()["text/plain"].startswith("TaskPlayground")


def test_task_playground_needs_a_provider() -> None:
    from codeagent_lite.workbook.real_model_lab import TaskPlayground

    with pytest.raises(ValueError, match="at least one provider"):
        TaskPlayground({}, ())


# --------------------------------------------------------------------------- timing


class SlowProvider(FixedProvider):
    """A fixed response that takes ``seconds`` to arrive, like a model writing its tokens."""

    def __init__(self, response: ProviderResponse, seconds: float) -> None:
        super().__init__(response)
        self.seconds = seconds

    def complete(
        self, *, messages: Sequence[ProviderMessage], tools: Sequence[ToolSpec], max_output_tokens: int
    ) -> ProviderResponse:
        time.sleep(self.seconds)
        return super().complete(messages=messages, tools=tools, max_output_tokens=max_output_tokens)


def test_ask_times_the_call_even_when_the_provider_fails() -> None:
    attempt = ask(SlowProvider(ProviderResponse(FINAL, 5, 10, "stop"), 0.05), "Hi", (), label="free_text")
    assert attempt.seconds is not None and 0.05 <= attempt.seconds < 5
    failed = ask(FixedProvider(ProviderError("down")), "Hi", (), label="free_text")
    assert failed.seconds is not None and failed.seconds >= 0


def _attempt(label: str, tokens: int, seconds: float | None) -> Attempt:
    usage = TokenUsage(100, tokens)
    return Attempt("Read notes", label, FINAL, "stop", usage, diagnose(FINAL), seconds=seconds)


def test_timing_table_has_seconds_speed_and_a_total_row_per_mode() -> None:
    attempts = [_attempt("free_text", 20, 0.5), _attempt("free_text", 30, 0.5), _attempt("schema", 30, 3.0)]
    # rows 2-4 are the calls, 5-6 the totals
    lines = timing_table(attempts).splitlines()
    assert [cell.strip() for cell in lines[0].split(" | ")] == ["task", "mode", "out", "seconds", "speed"]
    assert lines[2].split(" | ")[2:] == [" 20", "  0.50 s", "  40.0 tok/s"]
    assert lines[4].split(" | ")[2:] == [" 30", "  3.00 s", "  10.0 tok/s"]
    # The total leaves out a mode's first call, which also read the whole prompt.
    assert lines[5].split(" | ")[:3] == ["calls 2-2, prompt already read", "free_text", " 30"]
    assert lines[5].split(" | ")[3:] == ["  0.50 s", "  60.0 tok/s"]
    assert lines[6].split(" | ")[:2] == ["calls 1-1, prompt already read", "schema   "]
    assert lines[6].split(" | ")[2:] == [" 30", "  3.00 s", "  10.0 tok/s"]
    assert len({line.index("|") for line in lines if "|" in line}) == 1


def test_a_call_without_a_time_is_a_question_mark_not_a_guess() -> None:
    attempts = [_attempt("free_text", 20, 1.0), _attempt("free_text", 10, 1.0), _attempt("free_text", 10, None)]
    lines = timing_table(attempts).splitlines()
    assert lines[4].split(" | ")[2:] == [" 10", "     ? s", "     ? tok/s"]
    assert lines[5].split(" | ")[2:] == [" 20", "     ? s", "     ? tok/s"]  # calls 2-3: one time unknown


def test_timing_cells_keep_their_width_whatever_the_time() -> None:
    assert {len(seconds_cell(value)) for value in (0.01, 1.5, 12.25, 99.99, None)} == {8}
    assert {len(rate_cell(tokens, 1.0)) for tokens in (1, 45, 999)} == {12}


def test_the_zh_tables_line_up_by_display_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAL_LANG", "zh")
    lines = timing_table([_attempt("free_text", 20, 0.5)]).splitlines()
    assert lines[0].startswith("任务")
    bars = {display_width(line[: line.index("|")]) for line in lines if "|" in line}
    assert len(bars) == 1, lines


# --------------------------------------------------------------------------- the prompt notebook 06 shows


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_prompt_notebook_06_prints_is_the_one_its_first_task_sends(tmp_path: Path, language: str) -> None:
    provider = GemmaProvider("http://127.0.0.1:9/v1", "free_text")  # nothing is sent: build_request is what would be
    specs = [tool.spec for tool in workspace_tools(write_demo_workspace(tmp_path))]
    notebook = json.loads((NOTEBOOKS / language / "06_real_model.ipynb").read_text(encoding="utf-8"))
    cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    prompt_cell = next(cell for cell in cells if "print(prompt)" in "".join(cell["source"]))
    tasks_cell = next(cell for cell in cells if "".join(cell["source"]).startswith("TASKS = ["))
    assert "    FIRST_TASK,\n" in tasks_cell["source"]  # section 3 sends the task whose prompt section 2 shows
    messages = build_provider_messages([Message(MessageRole.USER, "Say hello in Chinese.")])
    sent = provider.build_request(messages, specs, 64)["prompt"]
    shown = "".join("".join(output["text"]) for output in prompt_cell["outputs"] if output.get("name") == "stdout")
    assert shown.endswith("\n\n" + sent + "\n")
    assert "Task: Say hello in French.\nReply: " in sent


def test_every_key_a_notebook_says_has_words() -> None:
    """A typo in a key would raise KeyError only when that one line is shown; find it here instead."""
    import re

    from codeagent_lite.workbook.cells import LABELS

    notebooks = Path(__file__).resolve().parent.parent / "notebooks"
    sources = [path.read_text(encoding="utf-8") for path in sorted(notebooks.glob("*/*.ipynb"))]
    said = {key for source in sources for key in re.findall(r"""\bsay\(\s*\\?["']([a-z0-9_]+)\\?["']""", source)}
    assert len(said) > 20 and said <= set(LABELS), said - set(LABELS)
