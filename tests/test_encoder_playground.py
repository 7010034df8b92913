"""The encoder playground, driven without a kernel: set widget values, click buttons, read what it shows."""

from __future__ import annotations

import html
import re

import pytest

from codeagent_lite import Message, MessageRole, ProviderMessage, ToolCall, ToolResult, build_provider_messages
from codeagent_lite.workbook.encoder_playground import (
    EMPTY_HISTORY_TEXT,
    SHOWN_CHARS,
    EncoderPlayground,
    format_conversion,
)


def shown(playground: EncoderPlayground) -> str:
    """What a learner reads in the view: its HTML with the tags removed and entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", playground.view.value))


def add_message(playground: EncoderPlayground, role: str, content: str) -> None:
    playground.kind.value = "Message"
    playground.role.value = role
    playground.message_content.value = content
    playground.add_button.click()


def add_call(playground: EncoderPlayground, call_id: str, tool_name: str, arguments: str) -> None:
    playground.kind.value = "ToolCall"
    playground.call_id.value = call_id
    playground.tool_name.value = tool_name
    playground.arguments.value = arguments
    playground.add_button.click()


def add_result(playground: EncoderPlayground, call_id: str, content: str, *, is_error: bool = False) -> None:
    playground.kind.value = "ToolResult"
    playground.result_call_id.value = call_id
    playground.result_content.value = content
    playground.is_error.value = is_error
    playground.add_button.click()


def test_starts_empty_and_says_how_to_begin() -> None:
    playground = EncoderPlayground()
    assert playground.history == ()
    assert shown(playground) == EMPTY_HISTORY_TEXT


def test_only_the_chosen_item_types_fields_are_visible() -> None:
    playground = EncoderPlayground()
    boxes = {
        "Message": playground.message_fields,
        "ToolCall": playground.call_fields,
        "ToolResult": playground.result_fields,
    }
    for kind in ("ToolCall", "ToolResult", "Message"):
        playground.kind.value = kind
        visible = {name for name, box in boxes.items() if box.layout.display != "none"}
        assert visible == {kind}


def test_building_a_history_shows_each_item_and_its_provider_message() -> None:
    playground = EncoderPlayground()
    add_message(playground, "user", "读一下 README")
    add_call(playground, "call_7", "read_file", '{"path": "README.md", "limit": 20}')
    add_result(playground, "call_7", "# codeagent-lite")

    assert playground.history == (
        Message(MessageRole.USER, "读一下 README"),
        ToolCall("call_7", "read_file", {"path": "README.md", "limit": 20}),
        ToolResult("call_7", "# codeagent-lite"),
    )
    assert playground.messages == (
        ProviderMessage("user", "读一下 README"),
        ProviderMessage(
            "assistant",
            '{"arguments":{"limit":20,"path":"README.md"},"call_id":"call_7","tool_name":"read_file","type":"tool_call"}',
        ),
        ProviderMessage(
            "user", '{"call_id":"call_7","content":"# codeagent-lite","is_error":false,"type":"tool_result"}'
        ),
    )
    assert shown(playground) == (
        "#1 Message(role='user', content='读一下 README')\n"
        "   -> ProviderMessage(role='user', content='读一下 README')\n"
        "#2 ToolCall(call_id='call_7', tool_name='read_file', arguments={'path': 'README.md', 'limit': 20})\n"
        '   -> ProviderMessage(role=\'assistant\', content=\'{"arguments":{"limit":20,"path":"README.md"},'
        '"call_id":"call_7","tool_name":"read_file","type":"tool_call"}\')\n'
        "#3 ToolResult(call_id='call_7', content='# codeagent-lite', is_error=False)\n"
        '   -> ProviderMessage(role=\'user\', content=\'{"call_id":"call_7","content":"# codeagent-lite",'
        '"is_error":false,"type":"tool_result"}\')'
    )
    assert playground.status.value == "✔ Added ToolResult as item #3."


def test_the_view_always_agrees_with_build_provider_messages() -> None:
    playground = EncoderPlayground()
    add_message(playground, "system", "Answer with one JSON action.")
    add_result(playground, "call_2", "permission denied", is_error=True)
    assert playground.messages == build_provider_messages(playground.history)
    for message in playground.messages:
        assert repr(message.content) in shown(playground)
    assert '"is_error":true' in shown(playground)


def test_the_view_escapes_html_typed_by_the_learner() -> None:
    playground = EncoderPlayground()
    add_message(playground, "user", "<b>bold?</b> & more")
    assert "<b>" not in playground.view.value
    assert "&lt;b&gt;bold?&lt;/b&gt; &amp; more" in playground.view.value
    assert "<b>bold?</b> & more" in shown(playground)


@pytest.mark.parametrize(
    ("arguments", "status"),
    [
        ("{", "✘ Not added: arguments is not valid JSON: Expecting property name enclosed in double quotes"),
        ('["README.md"]', "✘ Not added: arguments must be a JSON object {...}, found an array"),
        ('"README.md"', "✘ Not added: arguments must be a JSON object {...}, found the string 'README.md'"),
        ('{"limit": NaN}', "✘ Not added: the encoder refuses it (Out of range float values are not JSON compliant"),
        ('{"limit": Infinity}', "✘ Not added: the encoder refuses it (Out of range float values"),
        ('{"a":' + "[" * 100_000, "✘ Not added: arguments nest too deeply to be read"),
    ],
)
def test_bad_arguments_are_refused_with_a_message_and_nothing_is_added(arguments: str, status: str) -> None:
    playground = EncoderPlayground()
    add_message(playground, "user", "hi")
    before = shown(playground)
    add_call(playground, "call_1", "read_file", arguments)
    assert playground.status.value.startswith(status)
    assert len(playground.history) == 1
    assert shown(playground) == before


@pytest.mark.parametrize(
    ("kind", "field", "value", "status"),
    [
        ("Message", "message_content", "   ", "✘ Not added: content must not be blank"),
        ("ToolCall", "call_id", "", "✘ Not added: call_id must not be blank"),
        ("ToolCall", "tool_name", " ", "✘ Not added: tool_name must not be blank"),
        ("ToolResult", "result_call_id", "  ", "✘ Not added: call_id must not be blank"),
    ],
)
def test_blank_required_fields_are_refused(kind: str, field: str, value: str, status: str) -> None:
    playground = EncoderPlayground()
    playground.message_content.value = "hello"
    playground.kind.value = kind
    getattr(playground, field).value = value
    playground.add_button.click()
    assert playground.status.value == status
    assert playground.history == ()


def test_an_empty_tool_result_is_a_real_observation_and_is_added() -> None:
    playground = EncoderPlayground()
    add_result(playground, "call_1", "")
    assert playground.history == (ToolResult("call_1", ""),)


def test_call_ids_pass_through_untouched_even_out_of_order() -> None:
    playground = EncoderPlayground()
    add_call(playground, "call_a", "read_file", '{"path": "a.txt"}')
    add_call(playground, "call_b", "read_file", '{"path": "b.txt"}')
    add_result(playground, "call_b", "B")
    add_result(playground, "call_a", "A")
    ids = [re.search(r'"call_id":"([^"]+)"', m.content).group(1) for m in playground.messages]  # type: ignore[union-attr]
    assert ids == ["call_a", "call_b", "call_b", "call_a"]


def test_remove_last_and_clear() -> None:
    playground = EncoderPlayground()
    add_message(playground, "user", "one")
    add_message(playground, "assistant", "two")
    playground.remove_button.click()
    assert playground.history == (Message(MessageRole.USER, "one"),)
    assert playground.status.value == "Removed Message (was item #2)."
    assert "two" not in shown(playground)
    playground.clear_button.click()
    assert playground.history == ()
    assert shown(playground) == EMPTY_HISTORY_TEXT
    playground.remove_button.click()
    assert playground.status.value == "Nothing to remove: the history is empty."


def test_a_starting_history_is_shown_and_can_be_extended() -> None:
    start = [Message(MessageRole.SYSTEM, "Be brief."), ToolCall("call_1", "list_dir", {})]
    playground = EncoderPlayground(start)
    start.clear()  # the playground keeps its own copy
    assert len(playground.history) == 2
    assert shown(playground) == format_conversion(playground.history)
    add_result(playground, "call_1", "README.md")
    assert len(playground.history) == 3


def test_an_unencodable_starting_history_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        EncoderPlayground([ToolCall("call_1", "sleep", {"seconds": float("nan")})])


def test_each_item_is_shown_as_its_repr_and_a_non_item_is_refused() -> None:
    shown = format_conversion([Message("assistant", "ok"), ToolResult("c", "x", is_error=True)])
    assert "#1 Message(role='assistant', content='ok')\n" in shown
    assert "#2 ToolResult(call_id='c', content='x', is_error=True)\n" in shown
    with pytest.raises(TypeError, match=r"^cannot convert str to a provider message; expected Message, ToolCall"):
        format_conversion(["hello"])  # type: ignore[list-item]


def test_a_huge_item_is_shown_cut_with_a_count_of_what_was_left_out() -> None:
    playground = EncoderPlayground([ToolResult("call_1", "x" * 5_000_000)])
    assert len(playground.view.value) < 3 * SHOWN_CHARS + 500
    assert "more characters]" in playground.view.value


def test_core_package_does_not_import_the_playground() -> None:
    import subprocess
    import sys

    code = (
        "import sys, codeagent_lite\n"
        "print('ipywidgets' in sys.modules, 'codeagent_lite.workbook.encoder_playground' in sys.modules)"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]


def test_a_static_view_shows_a_placeholder_not_the_widget_tree() -> None:
    bundle = EncoderPlayground()._repr_mimebundle_()
    assert bundle["text/plain"].startswith("EncoderPlayground: a live widget")
    assert "application/vnd.jupyter.widget-view+json" in bundle
