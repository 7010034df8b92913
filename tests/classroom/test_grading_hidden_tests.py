"""Each hidden test in the teacher's copy, run on its own against many answers, in milliseconds.

The end-to-end test (test_grading_workflow.py) proves through nbgrader that one wrong answer per trap loses its
hidden-tests cell. This file runs the hidden cells directly, as the kernel would (answer cell, then hidden cell,
in one namespace), on more variants of each wrong answer and on right answers a strict test might refuse by
mistake. The hidden cell of exercise 3 reads the cells the kernel ran from IPython's ``In`` list; here that list
is kept by hand.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "classroom" / "source" / "exercises" / "05_exercises.ipynb"
MARKER = re.compile(r"^\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$")


def _cells() -> dict[str, str]:
    notebook = nbformat.read(SOURCE, as_version=4)
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in notebook.cells if "nbgrader" in cell.metadata
    }


def _solution(number: int) -> str:
    return "\n".join(line for line in _cells()[f"exercise_{number}_answer"].splitlines() if not MARKER.match(line))


def hidden_verdict(number: int, answer: str) -> str | None:
    """None when exercise ``number``'s hidden tests pass on ``answer``; otherwise the failure, as one line."""
    namespace: dict[str, Any] = {"__name__": "__main__", "In": [""]}
    namespace["get_ipython"] = lambda: SimpleNamespace(user_ns=namespace)
    for source in (answer, _cells()[f"exercise_{number}_hidden"]):
        namespace["In"].append(source)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, "<cell>", "exec"), namespace)
        except Exception as error:
            return f"{type(error).__name__}: {error}"
    return None


# --------------------------------------------------------------------------- exercise 2

LAYER_2_HEADER = """\
import json
from typing import Any

from codeagent_lite import InvalidModelOutputError, ValidationLayer, parse_json_action
"""

LAYER_2_WRONG = {
    "the package's function, called": """
from codeagent_lite import check_top_level_object

def my_check_top_level_object(value: Any) -> dict[str, Any]:
    return check_top_level_object(value)
""",
    "the package's function, renamed": """
from codeagent_lite.json_action_parser import check_top_level_object as layer_two

def my_check_top_level_object(value: Any) -> dict[str, Any]:
    return layer_two(value)
""",
    "the package's function, assigned": """
from codeagent_lite import check_top_level_object

my_check_top_level_object = check_top_level_object
""",
    "the whole parser, keeping its layer-2 errors": """
def my_check_top_level_object(value: Any) -> dict[str, Any]:
    try:
        parse_json_action(json.dumps(value))
    except InvalidModelOutputError as error:
        if error.layer is ValidationLayer.TOP_LEVEL_OBJECT:
            raise
    return value
""",
    "diagnose, keeping its layer-2 errors": """
from codeagent_lite import diagnose

def my_check_top_level_object(value: Any) -> dict[str, Any]:
    if diagnose(json.dumps(value)).rejected_by is ValidationLayer.TOP_LEVEL_OBJECT:
        raise InvalidModelOutputError(
            "model output must be an object",
            layer=ValidationLayer.TOP_LEVEL_OBJECT,
            expected="an object",
            found=type(value).__name__,
        )
    return value
""",
}

# The workbook's rule for expected= and found=, stated in the prompt: the self-check says it, so the hidden cell
# never takes a point for it from a student the self-check passed.
LAYER_2_STATED_RULE = {
    "question marks": """
def my_check_top_level_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise InvalidModelOutputError(
        "model output must be an object", layer=ValidationLayer.TOP_LEVEL_OBJECT, expected="?", found="?"
    )
""",
    "the same vague found for everything": """
def my_check_top_level_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise InvalidModelOutputError(
        "model output must be an object",
        layer=ValidationLayer.TOP_LEVEL_OBJECT,
        expected="a JSON object",
        found="not an object",
    )
""",
}

LAYER_2_RIGHT = {
    "found from describe-like words": """
def my_check_top_level_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    found = "null" if value is None else names.get(type(value), type(value).__name__)
    raise InvalidModelOutputError(
        f"model output must be an object, found {found}",
        layer=ValidationLayer.TOP_LEVEL_OBJECT,
        expected="a JSON object {...}",
        found=found,
    )
""",
    "found as the JSON text of the value": """
def my_check_top_level_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidModelOutputError(
            "model output must be an object",
            layer=ValidationLayer.TOP_LEVEL_OBJECT,
            expected="an object",
            found=json.dumps(value),
        )
    return value
""",
}


@pytest.mark.parametrize("case", list(LAYER_2_WRONG))
def test_exercise_2_hidden_tests_catch(case: str) -> None:
    verdict = hidden_verdict(2, LAYER_2_HEADER + LAYER_2_WRONG[case])
    assert verdict is not None and verdict.startswith("AssertionError"), verdict
    assert "self-check for exercise 2 does not pass" not in verdict, "the visible self-check already catches this"


@pytest.mark.parametrize("case", list(LAYER_2_STATED_RULE))
def test_exercise_2_stated_rule_fails_the_self_check_first(case: str) -> None:
    verdict = hidden_verdict(2, LAYER_2_HEADER + LAYER_2_STATED_RULE[case])
    assert verdict is not None and "self-check for exercise 2 does not pass" in verdict, verdict


@pytest.mark.parametrize("case", ["the teacher's solution", *LAYER_2_RIGHT])
def test_exercise_2_hidden_tests_pass(case: str) -> None:
    answer = _solution(2) if case == "the teacher's solution" else LAYER_2_HEADER + LAYER_2_RIGHT[case]
    assert hidden_verdict(2, answer) is None


def test_exercise_2_hidden_tests_put_the_package_back() -> None:
    import codeagent_lite
    import codeagent_lite.json_action_parser

    original = codeagent_lite.json_action_parser.check_top_level_object
    holders = [m for m in list(sys.modules.values()) if getattr(m, "check_top_level_object", None) is original]
    assert codeagent_lite in holders and codeagent_lite.json_action_parser in holders
    hidden_verdict(2, LAYER_2_HEADER + LAYER_2_WRONG["the whole parser, keeping its layer-2 errors"])
    assert [m.__name__ for m in holders if m.check_top_level_object is not original] == []


# --------------------------------------------------------------------------- exercise 3

KEY = {"A": 1, "B": 2, "C": 3, "D": 4, "E": 1, "F": 2, "G": 3, "H": 4, "I": None, "J": 4}
LITERAL = "predictions = {\n" + "".join(f"    {label!r}: {value},\n" for label, value in KEY.items()) + "}\n"

PREDICTIONS_WRONG = {
    "a dict comprehension over diagnose": """
from codeagent_lite import diagnose
from codeagent_lite.workbook.exercise_checks import PREDICTION_OUTPUTS

predictions = {label: diagnose(text).rejected_by for label, text in PREDICTION_OUTPUTS.items()}
""",
    "a loop over the parser": """
from codeagent_lite import InvalidModelOutputError, parse_json_action
from codeagent_lite.workbook.exercise_checks import PREDICTION_OUTPUTS

predictions = {}
for label, text in PREDICTION_OUTPUTS.items():
    try:
        parse_json_action(text)
        predictions[label] = None
    except InvalidModelOutputError as error:
        predictions[label] = int(error.layer)
""",
    "a hand-written dict with one wrong answer put right by diagnose": LITERAL.replace("'E': 1", "'E': 2")
    + """
from codeagent_lite import diagnose
from codeagent_lite.workbook.exercise_checks import PREDICTION_OUTPUTS

predictions["E"] = diagnose(PREDICTION_OUTPUTS["E"]).rejected_by
""",
    "update() from diagnose": LITERAL.replace("'E': 1", "'E': 2")
    + """
from codeagent_lite import diagnose
from codeagent_lite.workbook.exercise_checks import PREDICTION_OUTPUTS

predictions.update({"E": diagnose(PREDICTION_OUTPUTS["E"]).rejected_by})
""",
    "globals().update() from diagnose": """
from codeagent_lite import diagnose
from codeagent_lite.workbook.exercise_checks import PREDICTION_OUTPUTS

globals().update(predictions={label: diagnose(text).rejected_by for label, text in PREDICTION_OUTPUTS.items()})
""",
    "exec of a computed statement, after a wrong literal": LITERAL.replace("'A': 1", "'A': 2")
    + """
exec("from codeagent_lite import diagnose; predictions['A'] = diagnose('```').rejected_by")
""",
    "a name that never says predictions": """
from codeagent_lite import diagnose
from codeagent_lite.workbook.exercise_checks import PREDICTION_OUTPUTS

globals()["predic" + "tions"] = {label: diagnose(text).rejected_by for label, text in PREDICTION_OUTPUTS.items()}
""",
}


@pytest.mark.parametrize("case", list(PREDICTIONS_WRONG))
def test_exercise_3_hidden_tests_catch(case: str) -> None:
    verdict = hidden_verdict(3, PREDICTIONS_WRONG[case])
    assert verdict is not None and "computed, not predicted" in verdict, verdict


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_solution(3), id="the teacher's solution"),
        pytest.param(LITERAL, id="plain numbers"),
        pytest.param(
            "from codeagent_lite import ValidationLayer\n\n"
            + LITERAL.replace(": 1,", ": ValidationLayer.JSON_SYNTAX,").replace(": 4,", ": ValidationLayer.FIELDS,"),
            id="ValidationLayer members",
        ),
        pytest.param(LITERAL + 'predictions["E"] = 1  # changed my mind\n', id="one answer corrected by hand"),
    ],
)
def test_exercise_3_hidden_tests_pass(answer: str) -> None:
    assert hidden_verdict(3, answer) is None


def test_exercise_3_hidden_tests_fail_the_untouched_placeholders() -> None:
    placeholders = "predictions = {\n" + "".join(f"    {label!r}: ...,\n" for label in KEY) + "}\n"
    verdict = hidden_verdict(3, placeholders)
    assert verdict is not None and "self-check for exercise 3 does not pass" in verdict


# --------------------------------------------------------------------------- exercise 4

# `raise ... from error` is a rule exercise 4 states; its self-check checks it, before the hidden cell could.
ADAPTER_STATED_RULE = {
    "raise without from": ("raise error.with_usage(usage) from error", "raise error.with_usage(usage)"),
    "a new error without from": (
        "raise error.with_usage(usage) from error",
        "raise InvalidModelOutputError(error.message, usage=usage, layer=error.layer, raw_text=error.raw_text)",
    ),
    "from None": ("raise error.with_usage(usage) from error", "raise error.with_usage(usage) from None"),
}
ADAPTER_WRONG = {
    "the self-check's token counts hard-coded": (
        "raise error.with_usage(usage) from error",
        "raise error.with_usage(TokenUsage(80, 7)) from error",
    ),
}


@pytest.mark.parametrize("case", list(ADAPTER_WRONG))
def test_exercise_4_hidden_tests_catch(case: str) -> None:
    old, new = ADAPTER_WRONG[case]
    assert old in _solution(4)
    verdict = hidden_verdict(4, _solution(4).replace(old, new))
    assert verdict is not None and verdict.startswith("AssertionError"), verdict
    assert "self-check for exercise 4 does not pass" not in verdict, "the visible self-check already catches this"


@pytest.mark.parametrize("case", list(ADAPTER_STATED_RULE))
def test_exercise_4_stated_rule_fails_the_self_check_first(case: str) -> None:
    old, new = ADAPTER_STATED_RULE[case]
    verdict = hidden_verdict(4, _solution(4).replace(old, new))
    assert verdict is not None and "self-check for exercise 4 does not pass" in verdict, verdict


def test_exercise_4_hidden_tests_pass_a_new_error_raised_from_the_old_one() -> None:
    answer = _solution(4).replace(
        "raise error.with_usage(usage) from error",
        "raise InvalidModelOutputError(error.message, usage=usage, layer=error.layer, raw_text=error.raw_text,"
        " expected=error.expected, found=error.found) from error",
    )
    assert hidden_verdict(4, _solution(4)) is None
    assert hidden_verdict(4, answer) is None


# --------------------------------------------------------------------------- exercise 5

CORRECTION_HEADER = "from codeagent_lite import InvalidModelOutputError\n\n"
ASK = "Send exactly one JSON object."
CORRECTION_WRONG = {
    "every layer number": (
        'def correction_message(error):\n    return f"Layer 1, layer 2, layer 3 or layer 4 refused it. '
        f'Expected {{error.expected}}; found {{error.found}}. {ASK}"\n'
    ),
    "every layer title": (
        'def correction_message(error):\n    return f"Problem with JSON syntax / top-level object / action type / '
        f'fields and types. Expected {{error.expected}}; found {{error.found}}. {ASK}"\n'
    ),
}
CORRECTION_RIGHT = {
    "the number only": (
        'def correction_message(error):\n    return f"Rejected at layer {int(error.layer)}. '
        f'Expected {{error.expected}}; found {{error.found}}. {ASK}"\n'
    ),
    "the title only": (
        'def correction_message(error):\n    return f"Your reply failed the {error.layer.title} check. '
        f'Expected {{error.expected}}; found {{error.found}}. {ASK}"\n'
    ),
}


@pytest.mark.parametrize("case", list(CORRECTION_WRONG))
def test_exercise_5_stuffing_fails_the_self_check_first(case: str) -> None:
    # "name only the layer that refused" is stated in the prompt and checked by the self-check, before the hidden cell.
    verdict = hidden_verdict(5, CORRECTION_HEADER + CORRECTION_WRONG[case])
    assert verdict is not None and "self-check for exercise 5 does not pass" in verdict, verdict


@pytest.mark.parametrize("case", ["the teacher's solution", *CORRECTION_RIGHT])
def test_exercise_5_hidden_tests_pass(case: str) -> None:
    answer = _solution(5) if case == "the teacher's solution" else CORRECTION_HEADER + CORRECTION_RIGHT[case]
    assert hidden_verdict(5, answer) is None


# --------------------------------------------------------------------------- every hidden cell


@pytest.mark.parametrize("number", [2, 3, 4, 5])
def test_hidden_tests_fail_an_untouched_stub_first_on_the_self_check(number: int) -> None:
    release_stub = "\n".join(
        "# YOUR CODE HERE" if MARKER.match(line) and "BEGIN" in line else line
        for line in re.sub(
            r"### BEGIN SOLUTION.*?### END SOLUTION",
            "### BEGIN SOLUTION",
            _cells()[f"exercise_{number}_answer"],
            flags=re.S,
        ).splitlines()
    )
    verdict = hidden_verdict(number, release_stub)
    assert verdict is not None and f"self-check for exercise {number} does not pass" in verdict, verdict
