"""``verify`` on real folders: the stubs fail, the solutions pass, and plausible wrong
implementations each fail with the right check named. (The package's own modules pass the
same checks in-process: ``test_contract.py``; as a folder for verify they are no learner's.)

Every wrong implementation is the teacher's solution with one thing broken, written into
``tmp_path``; each test names the check that must catch it and shows that the checks around
it still pass (so the failure is the right one, not a side effect). Learner code that
misbehaves (hangs, exits, prints, does not compile) must give a clear line, never a
traceback or a hang; those tests use a short time limit to stay fast.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

import codeagent_lite
from codeagent_lite.cli import main
from codeagent_lite.workbook.contract import CHECKS
from codeagent_lite.workbook.verify import VerifyReport, VerifyUsageError, compare, verify

ROOT = Path(__file__).resolve().parent.parent
STUBS = ROOT / "notebooks" / "stubs" / "my_json_text"
SOLUTION = ROOT / "solutions" / "my_json_text"
BLOG_STAGE = ROOT / "solutions" / "blog_json_text"
PACKAGE = Path(codeagent_lite.__file__).resolve().parent
SHORT = 1.5  # seconds per check in the tests that hang on purpose


Edit = tuple[str, str | None, str]  # (file, old text or None for the whole file, new text)


@dataclass(frozen=True)
class Subject:
    """A folder to verify: ``base`` with ``edits`` applied, judged up to ``step``."""

    edits: tuple[Edit, ...] = ()
    step: int | None = None
    base: Path = SOLUTION
    name: str = "my_json_text"
    time_limit: float = 5.0


def build(folder: Path, subject: Subject) -> Path:
    """A copy of ``subject.base`` with each edit applied; the text an edit replaces must be there."""
    target = folder / subject.name
    shutil.copytree(subject.base, target, ignore=shutil.ignore_patterns("__pycache__"))
    for file, old, new in subject.edits:
        path = target / file
        if old is None:
            path.write_text(new, encoding="utf-8")
            continue
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} is not in {file}"
        path.write_text(text.replace(old, new), encoding="utf-8")
    return target


ENCODER = 'json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)'
LOAD = "    value = _load_strict_json(raw_text)\n"
BLOG_PARSER = (BLOG_STAGE / "json_action_parser.py").read_text(encoding="utf-8")
STUB_PARSER = (STUBS / "json_action_parser.py").read_text(encoding="utf-8")

SUBJECTS = {
    "stubs": Subject(base=STUBS),
    "solution": Subject(),
    "blog stage": Subject(base=BLOG_STAGE),
    "blog stage to step 3": Subject(base=BLOG_STAGE, step=3),
    "no sort_keys": Subject(
        (("json_text_messages.py", ENCODER, ENCODER.replace("sort_keys=True", "sort_keys=False")),), step=1
    ),
    "spaces": Subject((("json_text_messages.py", 'separators=(",", ":")', 'separators=(", ", ": ")'),), step=1),
    "default dumps": Subject((("json_text_messages.py", ENCODER, "json.dumps(value, sort_keys=True)"),), step=1),
    "tool call as user": Subject((("json_text_messages.py", 'role="assistant"', 'role="<b>user</b>"'),), step=1),
    "usage dropped": Subject((("json_text_adapter.py", "raise error.with_usage(usage) from error", "raise"),), step=2),
    "layer dropped": Subject(
        (
            (
                "json_text_adapter.py",
                "raise error.with_usage(usage) from error",
                "raise InvalidModelOutputError(str(error), usage=usage) from error",
            ),
        ),
        step=2,
    ),
    "cause lost": Subject(
        (
            (
                "json_text_adapter.py",
                'raise ModelProviderError(f"provider request failed: {error}") from error',
                "raise ModelProviderError(str(error)) from None",
            ),
        ),
        step=2,
    ),
    "catches everything": Subject(
        (("json_text_adapter.py", "except ProviderError as error:", "except Exception as error:"),), step=2
    ),
    "positional provider call": Subject(
        (
            (
                "json_text_adapter.py",
                "messages=provider_messages,\n                tools=tools,\n"
                "                max_output_tokens=budget.max_output_tokens,",
                "provider_messages, tools, budget.max_output_tokens",
            ),
        ),
        step=2,
    ),
    "budget sent as a float": Subject(
        (
            (
                "json_text_adapter.py",
                "max_output_tokens=budget.max_output_tokens,",
                "max_output_tokens=float(budget.max_output_tokens),",
            ),
        ),
        step=2,
    ),
    "unfinished parser": Subject((("json_action_parser.py", None, STUB_PARSER),), step=2),
    "lax json.loads parser": Subject((("json_action_parser.py", None, BLOG_PARSER),)),
    "wrong layer": Subject(
        (
            (
                "json_action_parser.py",
                "layer=ValidationLayer.TOP_LEVEL_OBJECT)",
                "layer=ValidationLayer.ACTION_TYPE)",
            ),
        ),
        step=3,
    ),
    "phrase missing": Subject((("json_action_parser.py", '"model output must be an object"', '"not a dict"'),), step=3),
    "crash": Subject(
        (("json_action_parser.py", 'action_type = value.get("type")', 'action_type = value["type"]'),), step=3
    ),
    "hang": Subject(
        (("json_action_parser.py", LOAD, "    while raw_text.startswith('Sure'):\n        pass\n" + LOAD),),
        step=3,
        time_limit=SHORT,
    ),
    "syntax error": Subject(
        (
            (
                "json_action_parser.py",
                "def parse_json_action(raw_text: str) -> Action:",
                "def parse_json_action(raw_text: str) -> Action",
            ),
        )
    ),
    "import error": Subject((("json_text_messages.py", "import json\n", "import json\nimport jsn_typo\n"),), step=1),
    "endless import": Subject(
        (("json_text_messages.py", "import json\n", "import json\nwhile True:\n    pass\n"),),
        step=1,
        time_limit=SHORT,
    ),
    "exits": Subject(
        (
            (
                "json_action_parser.py",
                LOAD,
                "    if raw_text == '':\n        raise SystemExit(3)\n"
                "    if raw_text == 'null':\n        import os\n        os._exit(7)\n" + LOAD,
            ),
        ),
        step=3,
    ),
    "prints and input": Subject(
        (
            (
                "json_action_parser.py",
                LOAD,
                "    print('debug:', raw_text[:10])\n    if raw_text == '\"42\"':\n        input('press enter')\n"
                + LOAD,
            ),
        ),
        step=3,
        time_limit=SHORT,
    ),
    "own error class": Subject(
        (
            (
                "json_action_parser.py",
                "from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer\n",
                "from codeagent_lite.model_adapter import ValidationLayer\n\n\n"
                "class InvalidModelOutputError(ValueError):\n"
                "    def __init__(self, message, layer=None):\n        super().__init__(message)\n",
            ),
        ),
        step=3,
    ),
    "control characters": Subject(
        (("json_action_parser.py", LOAD, "    raise ValueError('\\x1b[2J' + __file__)\n"),), step=3
    ),
    "named like a standard module": Subject(name="json", step=1),
    "memory bomb": Subject((("json_action_parser.py", LOAD, "    hoard = [0] * 10**10\n" + LOAD),), step=3),
    "missing parser": Subject((("json_action_parser.py", None, ""),), step=3),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, VerifyReport]:
    """Every subject verified once, several at a time: each run is a child process, mostly waiting."""
    folders = {}
    for name, subject in SUBJECTS.items():
        folders[name] = build(tmp_path_factory.mktemp(name.replace(" ", "_")), subject)
    missing = folders["missing parser"] / "json_action_parser.py"
    missing.unlink()
    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = {
            name: pool.submit(verify, folders[name], subject.step, time_limit=subject.time_limit)
            for name, subject in SUBJECTS.items()
        }
        return {name: future.result() for name, future in futures.items()}


def verdicts(report: VerifyReport) -> dict[str, bool | None]:
    return {result.check.id: result.passed for result in report.results}


def failing(report: VerifyReport) -> set[str]:
    return {result.check.id for result in report.results if result.passed is False}


def result_of(report: VerifyReport, check_id: str) -> str:
    return next(result.sentence for result in report.results if result.check.id == check_id)


# --------------------------------------------------------------------------- the real folders


def test_the_stubs_fail_every_check_and_say_they_are_not_written(reports: dict[str, VerifyReport]) -> None:
    report = reports["stubs"]
    assert report.exit_code == 1
    assert report.passed == 0
    assert len(report.results) == len(CHECKS)
    assert "not written" in result_of(report, "1.1")
    assert "not written" in result_of(report, "4.1")


@pytest.mark.parametrize("name", ["solution"])
def test_the_solution_and_the_package_pass_every_check(reports: dict[str, VerifyReport], name: str) -> None:
    report = reports[name]
    assert [r.sentence for r in report.failed] == []
    assert report.passed == len(CHECKS)
    assert report.exit_code == 0


def test_the_blog_stage_passes_steps_one_to_three_and_fails_only_the_workbooks_own_rules(
    reports: dict[str, VerifyReport],
) -> None:
    assert reports["blog stage to step 3"].exit_code == 0
    report = reports["blog stage"]
    failed = failing(report)
    assert failed, "the blog's json.loads parser must not pass step 4"
    assert all(check_id.startswith("4.") for check_id in failed)
    # json.loads itself refuses a cut-off reply, two values and a byte-order mark.
    assert {"4.1", "4.3", "4.6", "4.7", "4.8", "4.12"} <= failed
    assert not {"4.9", "4.10", "4.11"} & failed
    assert "delete_file" in result_of(report, "4.1")


def test_the_blog_stage_shares_the_solutions_messages_and_adapter() -> None:
    for name in ("json_text_messages.py", "json_text_adapter.py"):
        assert (BLOG_STAGE / name).read_text(encoding="utf-8") == (SOLUTION / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- plausible wrong implementations


def test_no_sort_keys_fails_the_sorting_check(reports: dict[str, VerifyReport]) -> None:
    report = reports["no sort_keys"]
    assert failing(report) == {"1.7", "1.10"}
    assert "keys in the order path, limit" in result_of(report, "1.7")


def test_spaces_in_the_json_fail_the_compact_check(reports: dict[str, VerifyReport]) -> None:
    assert failing(reports["spaces"]) == {"1.8", "1.10"}


def test_the_default_json_dumps_fails_readability_and_nan(reports: dict[str, VerifyReport]) -> None:
    assert failing(reports["default dumps"]) == {"1.8", "1.9", "1.10", "1.11"}


def test_a_tool_call_sent_as_the_user_fails_the_role_check(reports: dict[str, VerifyReport]) -> None:
    report = reports["tool call as user"]
    assert failing(report) == {"1.2"}
    assert "role '<b>user</b>'" in result_of(report, "1.2")


def test_usage_dropped_on_invalid_output_fails_the_usage_check(reports: dict[str, VerifyReport]) -> None:
    report = reports["usage dropped"]
    assert failing(report) == {"2.7"}
    assert "usage=None" in result_of(report, "2.7")


def test_a_new_error_without_the_layer_fails_the_invalid_output_checks_and_says_why(
    reports: dict[str, VerifyReport],
) -> None:
    # InvalidModelOutputError requires its layer, so building a new one without it is a TypeError in the adapter.
    report = reports["layer dropped"]
    assert failing(report) == {"2.7", "2.8", "2.9"}
    assert "missing 1 required keyword-only argument: 'layer'" in result_of(report, "2.9")
    assert "json_text_adapter.py line" in result_of(report, "2.9")


def test_a_lost_cause_fails_the_provider_error_check(reports: dict[str, VerifyReport]) -> None:
    report = reports["cause lost"]
    assert failing(report) == {"2.6"}
    assert "__cause__ None" in result_of(report, "2.6")


def test_a_budget_sent_as_another_type_fails_the_provider_arguments_check(reports: dict[str, VerifyReport]) -> None:
    # 200.0 == 200 in Python: the judge compares typed JSON, so a changed type is a changed value
    report = reports["budget sent as a float"]
    assert failing(report) == {"2.3"}
    assert "max_output_tokens=200.0" in result_of(report, "2.3")


def test_catching_every_exception_fails_the_pass_through_check(reports: dict[str, VerifyReport]) -> None:
    assert failing(reports["catches everything"]) == {"2.10"}


def test_one_mistake_failing_every_adapter_check_is_said_once_naming_them(reports: dict[str, VerifyReport]) -> None:
    report = reports["positional provider call"]
    assert failing(report) == {f"2.{n}" for n in range(1, 11)}
    text = str(report)
    assert text.count("takes 1 positional argument") == 1, text
    assert "the same for 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9, 2.10" in text


def test_the_adapter_is_judged_alone_even_when_the_parser_is_unfinished(reports: dict[str, VerifyReport]) -> None:
    assert reports["unfinished parser"].exit_code == 0


def test_a_lax_json_loads_parser_fails_step_four(reports: dict[str, VerifyReport]) -> None:
    report = reports["lax json.loads parser"]
    assert "4.1" in failing(report)
    assert not any(check_id.startswith(("1.", "2.", "3.")) for check_id in failing(report))
    assert "accepted as ToolCall(call_id='c1', tool_name='delete_file'" in result_of(report, "4.1")


def test_the_wrong_layer_is_named(reports: dict[str, VerifyReport]) -> None:
    report = reports["wrong layer"]
    assert failing(report) == {"3.8", "3.9", "3.10"}
    assert "a rejection at layer 3 (action type)" in result_of(report, "3.8")


def test_a_message_without_the_series_phrase_is_named(reports: dict[str, VerifyReport]) -> None:
    report = reports["phrase missing"]
    assert failing(report) == {"3.8", "3.9", "3.10"}
    assert "the right layer, but the message 'not a dict'" in result_of(report, "3.8")


def test_a_crash_is_named_with_its_file_and_line(reports: dict[str, VerifyReport]) -> None:
    report = reports["crash"]
    assert failing(report) == {"3.13"}
    assert "it raised KeyError: 'type' in json_action_parser.py line" in result_of(report, "3.13")


def test_a_hang_costs_one_time_limit_and_the_rest_of_its_step_is_not_run_said_once(
    reports: dict[str, VerifyReport],
) -> None:
    report = reports["hang"]
    assert failing(report) == {"3.4"}
    assert f"no answer within {SHORT:g} s" in result_of(report, "3.4")
    verdict = verdicts(report)
    assert all(verdict[f"3.{n}"] is None for n in range(5, 24))
    assert all(verdict[f"3.{n}"] for n in range(1, 4)) and all(verdict[f"1.{n}"] for n in range(1, 13))
    assert "this step stopped at 3.4" in result_of(report, "3.5")
    text = str(report)
    assert text.count("this step stopped at 3.4") == 1
    assert "the same for 3.6, 3.7" in text


def test_a_syntax_error_names_the_file_and_line_and_the_other_files_still_run(
    reports: dict[str, VerifyReport],
) -> None:
    report = reports["syntax error"]
    assert all(verdicts(report)[c.id] for c in CHECKS if c.step == 1)
    assert any("a syntax error in json_action_parser.py line" in problem for problem in report.file_problems)
    # The adapter imports the parser, so it cannot load either; its checks are "not run", not passed.
    assert all(verdicts(report)[c.id] is None for c in CHECKS if c.step >= 2)
    assert report.exit_code == 1


def test_an_import_error_is_named(reports: dict[str, VerifyReport]) -> None:
    (problem,) = reports["import error"].file_problems
    assert problem.startswith("json_text_messages.py could not be loaded: ModuleNotFoundError: No module named")
    assert "'jsn_typo' in json_text_messages.py line" in problem


def test_a_file_that_never_finishes_loading_is_stopped(reports: dict[str, VerifyReport]) -> None:
    report = reports["endless import"]
    assert report.file_problems == (
        f"json_text_messages.py could not be loaded: no answer within {SHORT:g} s "
        "(an endless loop, or input() waiting?); it was stopped",
    )
    assert report.passed == 0
    assert all(result.passed is None for result in report.results)


def test_system_exit_and_os_exit_are_reported_and_verify_goes_on(reports: dict[str, VerifyReport]) -> None:
    report = reports["exits"]
    assert failing(report) == {"3.7", "3.10"}
    assert "SystemExit(3)" in result_of(report, "3.7")
    assert "exit status 7" in result_of(report, "3.10")
    assert verdicts(report)["3.11"] is True


def test_prints_and_input_neither_break_verify_nor_hang_it(reports: dict[str, VerifyReport]) -> None:
    report = reports["prints and input"]
    assert failing(report) == {"3.9"}
    assert "EOFError" in result_of(report, "3.9")
    notes = [note for result in report.results for note in result.notes]
    assert any(note.startswith("json_action_parser.py printed 'debug:") for note in notes)


def test_an_error_class_of_its_own_is_named(reports: dict[str, VerifyReport]) -> None:
    assert "an InvalidModelOutputError of its own" in result_of(reports["own error class"], "3.4")


def test_control_characters_and_paths_never_reach_the_report(
    reports: dict[str, VerifyReport], tmp_path_factory: pytest.TempPathFactory
) -> None:
    report = reports["control characters"]
    text, page = str(report), report._repr_html_()
    assert "\x1b" not in text and "\x1b" not in page
    assert "\\x1b[2J" in text
    base = str(tmp_path_factory.getbasetemp())
    assert base not in text and base not in page


def test_a_folder_named_like_a_standard_module_still_loads(reports: dict[str, VerifyReport]) -> None:
    assert reports["named like a standard module"].exit_code == 0


def test_a_memory_bomb_is_a_memory_error_not_a_machine_out_of_memory(reports: dict[str, VerifyReport]) -> None:
    report = reports["memory bomb"]
    assert report.passed == 22  # steps 1 and 2; every parser check meets the MemoryError
    assert "it raised MemoryError" in result_of(report, "3.1")


def test_a_missing_file_is_a_failure_not_a_usage_error(reports: dict[str, VerifyReport]) -> None:
    report = reports["missing parser"]
    assert any("json_action_parser.py is missing from my_json_text" in p for p in report.file_problems)
    assert report.exit_code == 1


def test_a_sandbox_that_cannot_start_says_so_not_that_the_learner_crashed(monkeypatch: pytest.MonkeyPatch) -> None:
    from codeagent_lite.workbook import sandbox

    def refused(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/secret/host/path")

    monkeypatch.setattr(sandbox, "_start", refused)
    report = verify(SOLUTION, step=1, time_limit=SHORT)
    said = {result.got for result in report.results}
    assert said == {"this step did not start: the sandbox could not start (Permission denied)"}, said


# --------------------------------------------------------------------------- usage and display


def test_bad_usage_raises_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VerifyUsageError, match="is not a folder"):
        verify(tmp_path / "nowhere")
    with pytest.raises(VerifyUsageError) as odd:  # escaped once, for the terminal: not escaped again by repr
        verify("\x1b[31mx\u202e")
    assert str(odd.value).startswith("'\\x1b[31mx\\u202e' is not a folder"), str(odd.value)
    with pytest.raises(VerifyUsageError, match=r"holds none of json_text_messages\.py"):
        verify(tmp_path)
    with pytest.raises(VerifyUsageError, match="step must be one of 1, 2, 3, 4, found 5"):
        verify(SOLUTION, step=5)
    for bad in (0.499, 1e-9, 0, -1, float("nan"), float("inf")):
        with pytest.raises(VerifyUsageError, match=r"time_limit must be at least 0\.5 and at most 600 seconds"):
            verify(SOLUTION, time_limit=bad)


def test_the_report_reads_as_text_and_as_html(reports: dict[str, VerifyReport]) -> None:
    report = reports["tool call as user"]
    text = str(report)
    assert text.startswith("verify my_json_text: steps 1-1")
    assert "  ✘ 1.2 a ToolCall is sent with the assistant role" in text
    assert "  ✔ 1.1 a Message keeps its role and content" in text
    assert "11 of 12 checks pass; start with 1.2 (json_text_messages.py)" in text
    page = report._repr_html_()
    assert "&lt;b&gt;user&lt;/b&gt;" in page and "<b>user</b>" not in page
    assert repr(report) == "VerifyReport('my_json_text', 11 of 12 checks pass)"


def test_the_command_line_says_what_was_wrong_with_exit_status_two(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in (["no/such/folder"], ["solutions/my_json_text", "--step", "9"], ["solutions", "--step", "x"]):
        assert main(["verify", *bad]) == 2, bad
    errors = capsys.readouterr().err
    assert "is not a folder" in errors and "step must be one of" in errors and "expected a whole number" in errors
    assert "Traceback" not in errors


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeagent_lite", "verify", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        encoding="utf-8",
    )


def test_the_command_line_exit_status() -> None:
    passed = run_cli("solutions/my_json_text", "--step", "1")
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.startswith("verify solutions/my_json_text: steps 1-1")
    failed = run_cli("notebooks/stubs/my_json_text", "--step", "1", "--time-limit", "3")
    assert failed.returncode == 1
    assert "0 of 12 checks pass" in failed.stdout


# --------------------------------------------------------------------------- yours beside ours


def test_the_blog_stage_beside_ours_differs_exactly_where_json_loads_is_lax() -> None:
    comparison = compare(BLOG_STAGE, 4)
    differ = {row.label for row in comparison.rows if not row.same}
    assert differ == {
        "a duplicate tool_name",
        "a duplicate path",
        "NaN seconds",
        "1e999 seconds",
        "5000 nines",
        "nesting 100 000 deep",
        "a blank call_id",
    }
    duplicate = next(row for row in comparison.rows if row.label == "a duplicate tool_name")
    assert duplicate.reference == "✘ rejected at layer 1 (JSON syntax)"
    assert "tool_name='delete_file'" in duplicate.yours and "delete_file" in duplicate.cost
    assert "7 of 13 differ" in str(comparison)
    assert "<td" in comparison._repr_html_()


@pytest.mark.parametrize("step", [1, 2, 3])
def test_the_solution_beside_ours_is_the_same(step: int) -> None:
    comparison = compare(SOLUTION, step)
    assert comparison.rows and all(row.same for row in comparison.rows), str(comparison)


def test_the_stubs_beside_ours_say_what_is_missing() -> None:
    comparison = compare(STUBS, 2)
    assert all("not written" in row.yours for row in comparison.rows)
    with pytest.raises(VerifyUsageError):
        compare(STUBS, 7)


def test_a_seed_gives_fresh_inputs_the_solution_still_passes_and_the_report_says_so() -> None:
    report = verify(SOLUTION, seed=424242)
    assert report.passed == len(report.results)
    assert any("seed 424242" in note for note in report.notes)
    with pytest.raises(VerifyUsageError):
        verify(SOLUTION, seed="7")  # type: ignore[arg-type]


def test_the_packages_own_folder_is_no_learners_its_reference_is_not_in_the_sandbox() -> None:
    """The reference's files import the strict JSON layer and each other inside the package; copied
    into the sandbox as a learner's folder they find none of it, so nothing of the reference passes there."""
    report = verify(PACKAGE, step=1, time_limit=SHORT)
    assert report.passed == 0
    assert report.file_problems


def test_the_learner_parser_facts_come_as_data_beside_the_words() -> None:
    from codeagent_lite.workbook.verify import learner_parses

    texts = [
        '{"type": "final_answer", "content": "42"}',
        '```json\n{"type": "final_answer", "content": "42"}\n```',
        '[{"type": "final_answer", "content": "42"}]',
        '{"type": "tool_result", "call_id": "c1", "content": "ok", "is_error": false}',
        '{"type": "final_answer"}',
    ]
    solved = learner_parses(SOLUTION, texts)
    assert [(parsed.accepted, parsed.rejected_at) for parsed in solved] == [
        (True, None),
        (False, 1),
        (False, 2),
        (False, 3),
        (False, 4),
    ]
    assert solved[0].shown.startswith("✔ ") and solved[1].shown.startswith("✘ ")
    assert solved[0].verdict == solved[0].shown.removeprefix("✔ ") and solved[1].verdict == solved[1].shown
    unwritten = learner_parses(STUBS, texts[:1])
    assert [(parsed.accepted, parsed.rejected_at) for parsed in unwritten] == [(False, None)]
    assert "NotImplementedError" in unwritten[0].shown and unwritten[0].verdict == unwritten[0].shown


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", "verify answers no more parse calls"), ("zh", "verify 不再回答你的 Adapter 的 parse 调用")],
)
def test_a_refused_stand_in_call_is_worded_by_the_parent_in_the_learners_language(
    language: str, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeagent_lite.workbook.verify_standins import StandIns

    monkeypatch.setenv("CAL_LANG", language)
    stand_ins = StandIns(values={"canned_action": None})
    answers = [stand_ins.answer({"call": "parse", "text": "x"}) for _ in range(9)]
    assert [answer.get("refused", False) for answer in answers] == [False] * 8 + [True]
    assert words in answers[-1]["message"]
