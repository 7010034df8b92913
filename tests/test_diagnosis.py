"""diagnose: every layer's outcome, agreeing with parse_json_action on verdict and message."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from codeagent_lite.diagnosis import ACTION_CHARS, LayerStatus, describe_action, diagnose, format_ladder
from codeagent_lite.json_action_parser import parse_json_action
from codeagent_lite.kernel_types import FinalAnswer, ToolCall
from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer

P, F, N = LayerStatus.PASSED, LayerStatus.FAILED, LayerStatus.NOT_REACHED

CASES = [
    ('{"type":"final_answer","content":"42"}', [P, P, P, P]),
    ('{"type":"tool_call","call_id":"c","tool_name":"t","arguments":{}}', [P, P, P, P]),
    ('```json\n{"type":"final_answer","content":"42"}\n```', [F, N, N, N]),
    ('{"type":"final_answer","content":"4', [F, N, N, N]),
    ("", [F, N, N, N]),
    ("[1, 2]", [P, F, N, N]),
    ('{"type":"Final_Answer","content":"42"}', [P, P, F, N]),
    ('{"content":"42"}', [P, P, F, N]),
    ('{"type":"final_answer","content":42}', [P, P, P, F]),
    ('{"type":"tool_call","call_id":"c","tool_name":"t"}', [P, P, P, F]),
]


@pytest.mark.parametrize(("text", "statuses"), CASES)
def test_outcomes_per_layer(text: str, statuses: list[LayerStatus]) -> None:
    diagnosis = diagnose(text)
    assert [o.layer for o in diagnosis.outcomes] == list(ValidationLayer)
    assert [o.status for o in diagnosis.outcomes] == statuses
    for outcome in diagnosis.outcomes:
        assert (outcome.error is not None) == (outcome.status is F)


@pytest.mark.parametrize(("text", "statuses"), CASES)
def test_same_verdict_and_message_as_parse_json_action(text: str, statuses: list[LayerStatus]) -> None:
    diagnosis = diagnose(text)
    try:
        action = parse_json_action(text)
    except InvalidModelOutputError as error:
        assert not diagnosis.accepted
        assert diagnosis.action is None
        assert diagnosis.error is not None
        assert diagnosis.rejected_by is error.layer
        assert diagnosis.error.message == error.message
        assert diagnosis.error.raw_text == text
        failed = [o for o in diagnosis.outcomes if o.status is F]
        assert [o.layer for o in failed] == [error.layer]
    else:
        assert diagnosis.accepted
        assert diagnosis.action == action
        assert diagnosis.error is None
        assert diagnosis.rejected_by is None


def test_diagnose_never_raises_for_hostile_text() -> None:
    for text in ["[" * 100_000, '{"a":1,"a":2}', "\ufeff{}", '{"a":NaN}', "9" * 10_000]:
        diagnosis = diagnose(text)
        assert diagnosis.rejected_by is ValidationLayer.JSON_SYNTAX


def test_ladder_for_an_accepted_action() -> None:
    ladder = format_ladder(diagnose('{"type":"tool_call","call_id":"c1","tool_name":"ls","arguments":{"path":"."}}'))
    lines = ladder.splitlines()
    assert len(lines) == 5
    assert all(line.startswith("✔ layer") and line.endswith("passed") for line in lines[:4])
    assert "JSON syntax" in lines[0] and "fields and types" in lines[3]
    assert lines[4] == "=> ToolCall(call_id='c1', tool_name='ls', arguments={'path': '.'})"


def test_ladder_for_a_rejection() -> None:
    ladder = format_ladder(diagnose('{"type":"tool_result"}'))
    lines = ladder.splitlines()
    assert lines[0].startswith("✔ layer 1") and lines[1].startswith("✔ layer 2")
    assert lines[2].startswith("✘ layer 3") and "failed: unsupported action type" in lines[2]
    assert lines[3].startswith("· layer 4") and lines[3].endswith("not reached")
    assert lines[4].startswith("=> rejected at layer 3: expected 'tool_call' or 'final_answer', found the string")


def test_describe_action() -> None:
    assert describe_action(FinalAnswer("好")) == "FinalAnswer(content='好')"
    assert describe_action(ToolCall("c", "t", {})) == "ToolCall(call_id='c', tool_name='t', arguments={})"
    with pytest.raises(TypeError):
        describe_action("not an action")  # type: ignore[arg-type]


def test_a_long_accepted_action_is_shortened_in_the_ladder() -> None:
    text = '{"type":"tool_call","call_id":"c","tool_name":"write_file","arguments":{"text":"' + "x" * 5000 + '"}}'
    diagnosis = diagnose(text)
    assert diagnosis.accepted
    shown = describe_action(diagnosis.action)  # type: ignore[arg-type]
    assert len(shown) == ACTION_CHARS and shown.endswith("…")
    assert shown.startswith("ToolCall(call_id='c', tool_name='write_file', arguments={'text': 'xxx")
    last_line = format_ladder(diagnosis).splitlines()[-1]
    assert last_line == "=> " + shown


def test_the_failed_layer_keeps_the_raw_text_and_the_caller_error_is_untouched() -> None:
    diagnosis = diagnose("[1]")
    assert diagnosis.error is not None and diagnosis.error.raw_text == "[1]"
    assert diagnosis.rejected_by is ValidationLayer.TOP_LEVEL_OBJECT


def _raises_recursion_error(depth: int, call: Callable[[str], object], text: str) -> bool:
    """Whether ``call(text)`` lets a RecursionError out when the stack is ``depth`` frames deep; lean, so the
    probe itself needs no frame more than the call."""
    if depth:
        return _raises_recursion_error(depth - 1, call, text)
    try:
        call(text)
    except InvalidModelOutputError:
        return False
    except RecursionError:
        return True
    return False


def test_a_nearly_full_stack_is_the_parsers_refusal_not_a_recursion_error() -> None:
    """The four checks called one by one let RecursionError out of diagnose where parse_json_action refuses."""
    text, limit = "[" * 60 + "]" * 60, sys.getrecursionlimit()
    for depth in range(limit - 80, limit - 3):
        try:
            parser_coped = not _raises_recursion_error(depth + 2, parse_json_action, text)  # diagnose: 2 frames more
            diagnose_failed = _raises_recursion_error(depth, diagnose, text)
        except RecursionError:  # the probe's own frames, past the parser's reach
            continue
        assert not (parser_coped and diagnose_failed), f"{limit - depth} frames left"
