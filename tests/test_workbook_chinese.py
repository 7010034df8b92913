"""What the package shows a learner speaks the edition's language (issue 9).

Each wired module runs once with ``CAL_LANG=zh`` and must print Chinese; the English texts
themselves are pinned by each module's own tests (and the English notebooks' saved outputs),
which run with the English default. Exercise 5's check must accept a correct correction
written in Chinese and still refuse a wrong one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codeagent_lite import InvalidModelOutputError, ValidationLayer
from codeagent_lite.workbook.exercise_checks import check_exercise, check_exercise_3, check_exercise_5
from codeagent_lite.workbook.ladder import layer_title

CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def zh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CAL_LANG", "zh")
    yield


@pytest.fixture
def en(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CAL_LANG", "en")
    yield


# --------------------------------------------------------------------------- exercise checks


def _stub(*arguments: Any) -> Any:
    raise NotImplementedError


def test_a_stub_is_reported_in_chinese(zh: None, capsys: pytest.CaptureFixture[str]) -> None:
    result = check_exercise_5(_stub)
    assert capsys.readouterr().out == "✘ 练习 5：还没通过 — 还没有实现（练习里的桩函数仍在抛出 NotImplementedError）\n"
    assert not result.passed


def test_a_stub_is_reported_in_english_under_en(en: None, capsys: pytest.CaptureFixture[str]) -> None:
    check_exercise_5(_stub)
    assert capsys.readouterr().out == (
        "✘ Exercise 5: not yet — not implemented yet (the stub still raises NotImplementedError)\n"
    )


def test_every_problem_line_of_a_wrong_answer_is_chinese(zh: None, capsys: pytest.CaptureFixture[str]) -> None:
    result = check_exercise_3({label: 1 for label in "ABCDEFGHIJ"})
    out = capsys.readouterr().out
    assert out.startswith("✘ 练习 3：还没通过 — 10 个预测里有 8 个不对"), out
    assert all(CHINESE.search(problem) for problem in result.problems)


def test_an_undefined_name_is_reported_in_chinese(zh: None) -> None:
    result = check_exercise(5, {})
    assert result.problems == ("correction_message 还没有定义：请先运行练习的单元格",)


def _chinese_correction(error: InvalidModelOutputError) -> str:
    return (
        f"你的回复没有通过第 {int(error.layer)} 层检查：期望 {error.expected}，实际得到 {error.found}。"
        "请只回复一个 JSON 对象，不要加任何解释或代码围栏。"
    )


def test_check_5_accepts_a_correct_correction_written_in_chinese(zh: None) -> None:
    assert check_exercise_5(_chinese_correction).passed


def test_check_5_accepts_a_chinese_correction_naming_the_layer_by_its_name() -> None:
    names = {1: "JSON 语法", 2: "顶层对象", 3: "行动类型", 4: "字段集合"}

    def by_name(error: InvalidModelOutputError) -> str:
        return (
            f"{names[int(error.layer)]}检查没有通过：期望 {error.expected}，实际得到 {error.found}。"
            "请只用一个 JSON 对象回复。"
        )

    assert check_exercise_5(by_name).passed


def _naming_another_layer(error: InvalidModelOutputError) -> str:
    other = "第四层" if error.layer is not ValidationLayer.FIELDS else "行动类型"
    return _chinese_correction(error) + f"{other}之后再说。"


def test_check_5_accepts_a_chinese_correction_that_says_the_reply_was_valid_json(zh: None) -> None:
    # "合法 JSON" names layer 1 loosely: it counts for a layer-1 rejection, and is no other layer's name
    assert check_exercise_5(lambda error: _chinese_correction(error) + "你的回复是合法 JSON 吗？").passed


@pytest.mark.parametrize(
    ("implementation", "problem"),
    [
        (_naming_another_layer, "只写出拒绝这条回复的那一层"),
        (lambda error: _chinese_correction(error).replace(f"第 {int(error.layer)} 层", "某一层"), "没有说明是哪一层"),
        (lambda error: _chinese_correction(error).replace("请只回复一个", "请回复"), "只回复一个 JSON 对象"),
        (lambda error: _chinese_correction(error).replace(str(error.found), "别的东西"), "实际得到的是什么"),
        (lambda error: _chinese_correction(error).replace(str(error.expected), "别的东西"), "期望的是什么"),
        (lambda error: _chinese_correction(error) + "请注意。" * 200, "请控制在 600 个以内"),
    ],
)
def test_check_5_still_rejects_a_bad_chinese_correction(
    zh: None, implementation: Callable[[InvalidModelOutputError], str], problem: str
) -> None:
    result = check_exercise_5(implementation)
    assert not result.passed
    assert any(problem in line for line in result.problems), result.problems


# --------------------------------------------------------------------------- environment check


def test_the_environment_check_speaks_chinese(zh: None) -> None:
    from codeagent_lite.workbook.environment_check import (
        PackageRequirement,
        check_distribution,
        check_importable,
        check_python,
        format_results,
    )

    missing = check_distribution(PackageRequirement("codeagent-lite-no-such-distribution", (1, 0)))
    text = format_results([check_python((3, 11, 0)), check_importable("codeagent_lite"), missing])
    assert text.splitlines() == [
        "[OK]   Python >= 3.11",
        "[OK]   codeagent_lite 可以导入",
        "[FAIL] codeagent-lite-no-such-distribution >= 1.0：没有安装"
        '（提示：在仓库根目录运行 `make lab` 或 `pip install -e ".[lab]"`，然后重启内核）',
        "3 项要求中有 1 项没有满足：请先修好，再运行笔记本。",
    ]
    assert check_python((3, 10, 2)).hint == "请在 Python 3.11 或更新版本的环境里启动 Jupyter"


def test_the_environment_check_speaks_english_under_en(en: None) -> None:
    from codeagent_lite.workbook.environment_check import check_importable, check_python, format_results

    assert format_results([check_python((3, 11, 0)), check_importable("codeagent_lite")]).splitlines() == [
        "[OK]   Python >= 3.11",
        "[OK]   codeagent_lite importable",
        "All 2 requirements met.",
    ]


# --------------------------------------------------------------------------- the two playgrounds


def test_the_parser_playground_speaks_chinese(zh: None) -> None:
    from codeagent_lite.workbook.parser_playground import ParserPlayground

    playground = ParserPlayground("top-level array")
    assert playground.preset.description == "预设："
    assert playground.text.placeholder == "在这里粘贴或输入模型的原始回复"
    assert "期望（expected）：" in playground.ladder.value
    assert "实际（found）：" in playground.ladder.value
    assert "Kernel 拿到的会是 InvalidModelOutputError，而不是一个行动" in playground.ladder.value
    assert playground._repr_mimebundle_()["text/plain"].startswith("ParserPlayground：一个交互控件")


def test_the_parser_playground_speaks_english_under_en(en: None) -> None:
    from codeagent_lite.workbook.parser_playground import ParserPlayground
    from codeagent_lite.workbook.widget_view import live_widget_text

    playground = ParserPlayground("top-level array")
    assert playground.preset.description == "Preset:"
    assert "expected: " in playground.ladder.value
    assert playground._repr_mimebundle_()["text/plain"] == live_widget_text("ParserPlayground", "en")


def test_the_encoder_playground_speaks_chinese(zh: None) -> None:
    from codeagent_lite.workbook.encoder_playground import EncoderPlayground

    playground = EncoderPlayground()
    assert "历史还是空的" in playground.shown_text
    assert playground.kind.description == "历史项类型"
    assert [button.description for button in (playground.add_button, playground.remove_button)] == [
        "加入历史",
        "删除最后一项",
    ]
    assert playground.clear_button.description == "清空"
    playground.remove_last()
    assert playground.status.value == "没有可删除的：历史是空的。"
    playground.kind.value = "ToolCall"
    playground.arguments.value = '["README.md"]'
    assert not playground.add()
    assert playground.status.value == "✘ 没有加入：arguments 必须是 JSON 对象 {...}，实际是 an array"
    playground.arguments.value = '{"path": "README.md"}'
    assert playground.add()
    assert playground.status.value == "✔ 已把 ToolCall 加为第 1 项。"


def test_the_encoder_playground_speaks_english_under_en(en: None) -> None:
    from codeagent_lite.workbook.encoder_playground import EMPTY_HISTORY_TEXT, EncoderPlayground

    playground = EncoderPlayground()
    assert playground.shown_text == EMPTY_HISTORY_TEXT
    assert playground.add_button.description == "Add to history"


# --------------------------------------------------------------------------- verify's report


def _report() -> Any:
    from codeagent_lite.workbook.contract import CHECKS
    from codeagent_lite.workbook.verify import CheckResult, VerifyReport

    first, second, *_ = [check for check in CHECKS if check.step == 1]
    ours = next(check for check in CHECKS if check.step == 1 and check.ours)
    results = (
        CheckResult(first, True),
        CheckResult(second, False, got="'x'"),
        CheckResult(ours, False, got="'y'", notes=("printed hi",)),
    )
    return VerifyReport("my_json_text", (1,), results)


def test_verify_report_speaks_chinese(zh: None) -> None:
    report = _report()
    text = str(report)
    second = report.results[1].check
    assert text.startswith(
        "verify my_json_text：第 1-1 步\n第 1 步 · 消息编码 · 二、消息转换（json_text_messages.py）\n"
    )
    words = second.words("zh")
    assert f"  ✘ {second.id} {words.name}\n" in text
    assert f"      输入 {words.given}，期望 {words.expected}，实际得到 'x'。" in text
    assert "[工作簿规则]" in text
    assert "（本工作簿自己的规则：" in text
    assert "      附注：printed hi" in text
    assert text.endswith(f"3 项检查通过了 1 项；先看 {second.id}（{second.file}.py）")
    assert report.overview() == "✘ 第 1 步 · 消息编码 · 二、消息转换（json_text_messages.py）：3 项检查通过了 1 项"
    assert "3 项检查通过了 1 项" in report._repr_html_()


def test_verify_report_speaks_english_under_en(en: None) -> None:
    report = _report()
    second = report.results[1].check
    assert str(report).startswith(
        "verify my_json_text: steps 1-1\nstep 1 · message encoding · 二、消息转换 (json_text_messages.py)\n"
    )
    assert f"      given {second.given}, expected {second.expected}, got 'x'." in str(report)
    assert str(report).endswith(f"1 of 3 checks pass; start with {second.id} ({second.file}.py)")


def test_the_comparison_speaks_chinese(zh: None) -> None:
    from codeagent_lite.workbook.verify import Comparison, ComparisonRow

    comparison = Comparison("mine", 3, (ComparisonRow("fenced", "rejected", "accepted", "the Kernel runs it"),))
    assert str(comparison).splitlines() == [
        "mine 与参考实现对照：第 3 步 · 博客的四层检查 · 四、行动解析（json_action_parser.py）",
        "≠ fenced",
        "    参考：rejected",
        "    你的：accepted",
        "    代价：the Kernel runs it",
        "1 个里有 1 个不同",
    ]
    assert "<code>mine</code> 与参考实现对照" in comparison._repr_html_()


def test_every_step_has_a_chinese_title(zh: None) -> None:
    from codeagent_lite.workbook.contract import STEPS, step_title

    for step, title in STEPS.items():
        assert step_title(step) != title
        assert CHINESE.search(step_title(step).split("·")[0]), step_title(step)


# --------------------------------------------------------------------------- notebook 06


def test_the_recorded_frame_speaks_chinese(zh: None) -> None:
    from codeagent_lite.workbook.engine_panel import RecordedRun, recorded

    run = RecordedRun(source={"notebooks": "n.ipynb", "engine": "1.0"}, editions={"en": {}, "zh": {"table": "a | b\n"}})
    assert recorded("table", run).splitlines() == [
        "╭─ 这是录制的输出（RECORDED），不是现场运行：来自这本笔记本的一次真实运行（engine 1.0）",
        "│ a | b",
        "╰─ 录制的输出到此为止；本地引擎准备好之后，再运行一次这个单元格",
    ]


def test_the_recorded_frame_speaks_english_under_en(en: None) -> None:
    from codeagent_lite.workbook.engine_panel import RECORDED_BOTTOM, RECORDED_TOP, RecordedRun, recorded

    run = RecordedRun(source={"notebooks": "n.ipynb", "engine": "1.0"}, editions={"en": {"table": "a | b\n"}, "zh": {}})
    lines = recorded("table", run).splitlines()
    assert lines[0] == "╭─ RECORDED output, not live: from a real run of this notebook (engine 1.0)"
    assert (lines[0].split(":")[0], lines[-1]) == (RECORDED_TOP, RECORDED_BOTTOM)  # English ids, shown as they are


def test_the_task_playground_speaks_chinese(zh: None) -> None:
    from codeagent_lite.json_text_adapter import ProviderResponse
    from codeagent_lite.scripted_provider import ScriptedProvider
    from codeagent_lite.workbook.real_model_lab import TaskPlayground, finish_note

    reply = ProviderResponse('{"type": "final_answer", "content": "hi"}', 10, 3, "length")
    playground = TaskPlayground({"free_text": ScriptedProvider([reply])}, ())
    assert (playground.task.description, playground.mode.description) == ("任务：", "模式：")
    assert playground.button.description == "问模型"
    assert playground.result.value == "<i>按下按钮：调用一次模型。</i>"
    assert playground._repr_mimebundle_()["text/plain"].startswith("TaskPlayground：一个交互控件")
    attempt = playground.run_once()
    assert finish_note(attempt) == "finish_reason 'length'：回复碰到了 max_output_tokens，在中途被截断"
    assert "在中途被截断" in playground.result.value


def test_the_task_playground_speaks_english_under_en(en: None) -> None:
    from codeagent_lite.scripted_provider import ScriptedProvider
    from codeagent_lite.workbook.real_model_lab import TaskPlayground

    playground = TaskPlayground({"free_text": ScriptedProvider([])}, ())
    assert (playground.task.description, playground.button.description) == ("Task:", "Ask the model")


def test_the_engine_report_speaks_chinese(zh: None) -> None:
    from codeagent_lite.providers.local_engine import engine_status
    from codeagent_lite.workbook.engine_panel import engine_report

    report = engine_report(engine_status())
    assert "下面的单元格会现场调用模型" in report or "在那之前，下面每个调用模型的单元格" in report


# --------------------------------------------------------------------------- verify run end to end, the ladders

STUBS = Path(__file__).resolve().parent.parent / "notebooks" / "stubs" / "my_json_text"


def test_verify_prints_chinese_check_names_in_zh_and_the_english_ones_in_en(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from codeagent_lite.workbook.contract import checks_up_to
    from codeagent_lite.workbook.verify import verify

    # English first: the checking process then starts with English around it, and must still be told zh.
    monkeypatch.setenv("CAL_LANG", "en")
    english = str(verify(STUBS, step=1)).splitlines()
    monkeypatch.setenv("CAL_LANG", "zh")
    chinese = str(verify(STUBS, step=1)).splitlines()
    checks = checks_up_to(1)
    assert [line for line in english if line.startswith("  ✘ ")] == [
        f"  ✘ {check.id} {check.name}{' [workbook rule]' if check.ours else ''}" for check in checks
    ]
    assert english[3].startswith(f"      given {checks[0].given}, expected {checks[0].expected}, got nothing yet")
    names = [line for line in chinese if line.startswith("  ✘ ")]
    assert names == [
        f"  ✘ {check.id} {check.words('zh').name}{' [工作簿规则]' if check.ours else ''}" for check in checks
    ]
    assert all(CHINESE.search(line.split(" ", 4)[-1]) for line in names)
    # The sentence, and what the checking process says came back, are Chinese too.
    assert chinese[3].startswith(f"      输入 {checks[0].words('zh').given}，期望 ")
    assert "实际得到 还没有实现：这里的代码还没写（NotImplementedError，位于 json_text_messages.py 第" in chinese[3]


def test_the_zh_ladder_names_its_layers_in_chinese(zh: None) -> None:
    from codeagent_lite import diagnose
    from codeagent_lite.workbook.ladder import format_ladder, layer_label

    assert format_ladder(diagnose('{"type": "tool_result"}')).splitlines() == [
        "✔ 第 1 层  JSON 语法         通过",
        "✔ 第 2 层  顶层对象          通过",
        "✘ 第 3 层  行动类型          拒绝：unsupported action type: expected 'tool_call' or 'final_answer', "
        "found the string 'tool_result'",
        "· 第 4 层  字段集合与类型    未走到",
        "=> 在第 3 层被拒绝：期望 'tool_call' 或 'final_answer'，实际 字符串 'tool_result'",
    ]
    assert layer_label(ValidationLayer.FIELDS) == "第 4 层（字段集合与类型）"


def test_the_en_ladder_is_the_chapters_byte_for_byte(en: None) -> None:
    from codeagent_lite import diagnose, format_ladder
    from codeagent_lite.workbook.ladder import format_ladder as edition_ladder
    from codeagent_lite.workbook.ladder import layer_label

    for text in ['{"type": "final_answer", "content": "42"}', "[1]", '{"type": "final_answer"}', "Sure!"]:
        assert edition_ladder(diagnose(text)) == format_ladder(diagnose(text))
    assert [layer_label(layer) for layer in ValidationLayer] == [layer.label for layer in ValidationLayer]


def test_the_playground_names_its_presets_in_chinese_and_keeps_their_english_keys(zh: None) -> None:
    from codeagent_lite.workbook.parser_playground import PRESETS, ParserPlayground, static_ladders_text

    dropdown = ParserPlayground("duplicate key").preset
    assert dropdown.value == "duplicate key" and list(dropdown._options_values) == list(PRESETS)
    assert dropdown.label == "重复键" and all(CHINESE.search(label) for label in dropdown._options_labels)
    assert static_ladders_text(["top-level array"]).startswith("--- 顶层是数组\n")


def test_the_playground_ladders_and_the_learner_ladder_speak_chinese(zh: None) -> None:
    from codeagent_lite.workbook.learner_ladder import learner_ladders
    from codeagent_lite.workbook.parser_playground import ParserPlayground, static_ladders_text

    assert "✘ 第 2 层  顶层对象          拒绝：" in static_ladders_text(["top-level array"])
    ladder_html = ParserPlayground("top-level array").ladder.value
    assert "第 2 层（顶层对象）" in ladder_html and ">拒绝<" in ladder_html
    text = str(learner_ladders(STUBS, ["[]"]))
    assert "第 2 层" in text and "✘ 拒绝" in text and "=> 参考：✘ 在第 2 层（顶层对象）被拒绝" in text
    named = learner_ladders(STUBS, {"top-level array": "[]", "my own reply": "{}", 7: "[]", "": "{}"})
    assert [pair.name for pair in named.pairs] == ["顶层是数组", "my own reply", "7", ""]


def test_the_preset_list_gives_each_key_with_its_chinese_name(zh: None) -> None:
    from codeagent_lite.workbook.parser_playground import PRESETS, preset_names

    lines = preset_names().splitlines()
    assert len(lines) == len(PRESETS) and lines[0] == "clean tool call  ·  合法的工具调用"
    assert all(
        line.startswith(key + "  ·  ") and CHINESE.search(line) for line, key in zip(lines, PRESETS, strict=True)
    )


def test_the_preset_list_is_the_keys_alone_in_english(en: None) -> None:
    from codeagent_lite.workbook.parser_playground import PRESETS, preset_names

    assert preset_names().splitlines() == list(PRESETS)


def test_compare_labels_its_rows_in_chinese_and_keeps_the_folders_name(zh: None) -> None:
    from codeagent_lite.workbook.verify import compare

    comparison = compare(STUBS, 1)
    assert comparison.label == "my_json_text"
    assert [row.label for row in comparison.rows] == ["一条 Message", "一个 ToolCall", "内容是中文的 ToolResult"]
    assert comparison.rows[0].yours.startswith("还没有实现：")
    assert str(comparison).startswith("my_json_text 与参考实现对照：第 1 步")


def test_a_shared_code_cells_label_follows_the_edition(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from codeagent_lite.workbook.cells import say

    monkeypatch.setenv("CAL_LANG", "en")
    say("same_action", True)
    say("usage", "TokenUsage(1, 2)")
    assert capsys.readouterr().out == "same action as by hand: True\nusage:  TokenUsage(1, 2)\n"
    monkeypatch.setenv("CAL_LANG", "zh")
    say("same_action", True)
    say("refused_it", layer="第 1 层（JSON 语法）", message="model output must be valid JSON")
    assert capsys.readouterr().out == (
        "和手工解析得到的行动相同：True\n第 1 层（JSON 语法）拒绝了它：model output must be valid JSON\n"
    )


def test_the_stubs_docstrings_speak_chinese_first_then_english() -> None:
    """The learner's stubs are read on the Chinese path: every docstring opens in Chinese and carries the English."""
    import ast
    import re

    for path in sorted(STUBS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        documented = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef)))]
        for node in documented:
            docstring = ast.get_docstring(node)
            where = f"{path.name}:{getattr(node, 'name', 'module')}"
            assert docstring, f"{where} has no docstring"
            assert re.search(r"[\u4e00-\u9fff]", docstring.split("\n", 1)[0]), f"{where} opens in English"
            first_chinese = re.search(r"[\u4e00-\u9fff]", docstring)
            assert first_chinese is not None
            prose = re.sub(r"``.*?``", " ", docstring[first_chinese.start() :], flags=re.S)
            english = re.search(r"\b[A-Za-z]{3,} [A-Za-z]{3,}\b", prose)
            assert english, f"{where}: no English after the Chinese"


# --------------------------------------------------------------------------- the zh notebooks' saved outputs

_ZH_LAYER = re.compile(r"第 (\d) 层（([^）]*)）")


def test_the_zh_notebooks_print_each_layer_with_its_chinese_title() -> None:
    """A shared code cell that formats ``layer.title`` (the chapter's English) into a Chinese sentence printed
    "第 1 层（JSON syntax）"; the edition's title comes from the catalog (``cells.layer_title``)."""
    wrong = []
    for path in sorted(Path(__file__).resolve().parent.parent.joinpath("notebooks", "zh").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for output in cell.get("outputs", []):
                text = "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
                for number, title in _ZH_LAYER.findall(text):
                    if title != layer_title(ValidationLayer(int(number)), "zh"):
                        wrong.append(f"{path.name}: 第 {number} 层（{title}）")
    assert not wrong, wrong
