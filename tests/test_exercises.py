"""The exercise book's self-checks: each must fail on its untouched stub and pass on the solutions.

A self-check that cannot fail would tell every learner "passed", so besides the stubs each
check is also fed plausible wrong answers (the mistakes learners actually make) and must
name what is wrong with each.

The stubs come from the learners' copy (notebooks/en/05_exercises.ipynb, nbgrader's student release);
the solutions from the teacher's copy, the nbgrader source notebook in classroom/source/, whose
answer cells hold them between ### BEGIN SOLUTION and ### END SOLUTION. The Chinese edition
(notebooks/zh/, from classroom/source/exercises_zh/) has the same exercise cells, which is checked
here, so the stubs and solutions are run once, from the English edition.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from codeagent_lite import (
    BLOG_URL,
    InvalidModelOutputError,
    ModelProviderError,
    ModelResponse,
    ProviderError,
    ProviderMessage,
    TokenUsage,
    ValidationLayer,
    build_provider_messages,
    parse_json_action,
)
from codeagent_lite.json_text_messages import encode_json
from codeagent_lite.workbook.exercise_checks import (
    EXERCISE_NAMES,
    PREDICTION_OUTPUTS,
    ExerciseVerdict,
    ToolCallRejected,
    check_exercise,
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
    check_exercise_5,
    check_exercise_6,
)

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "en" / "05_exercises.ipynb"
SOURCE = ROOT / "classroom" / "source" / "exercises" / "05_exercises.ipynb"
# Each edition's student copy and teacher's copy, by language.
EDITIONS = {
    "en": (NOTEBOOK, SOURCE),
    "zh": (
        ROOT / "notebooks" / "zh" / "05_exercises.ipynb",
        ROOT / "classroom" / "source" / "exercises_zh" / NOTEBOOK.name,
    ),
}
EXERCISES = sorted(EXERCISE_NAMES)


def _cells(path: Path = NOTEBOOK) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells


def _source(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def _tagged(kind: str, path: Path = NOTEBOOK) -> dict[int, dict[str, Any]]:
    """Cells tagged ``kind`` (exercise-stub or exercise-check), by exercise number; duplicates fail."""
    found: dict[int, dict[str, Any]] = {}
    for cell in _cells(path):
        tags = cell.get("metadata", {}).get("tags", [])
        if kind not in tags:
            continue
        numbers = [int(m.group(1)) for tag in tags if (m := re.fullmatch(r"exercise-(\d+)", tag))]
        assert len(numbers) == 1, f"a {kind} cell needs exactly one exercise-N tag, has {tags}"
        assert numbers[0] not in found, f"two {kind} cells for exercise {numbers[0]}"
        found[numbers[0]] = cell
    return found


def _run_stub(number: int) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": f"exercise_{number}_stub"}
    exec(compile(_source(_tagged("exercise-stub")[number]), f"<exercise {number} stub>", "exec"), namespace)
    return namespace


def _solutions() -> ModuleType:
    """The teacher's answer cells run in order, as one module (the solution regions are plain code there)."""
    module = ModuleType("exercises_solutions")
    for number, cell in sorted(_tagged("exercise-stub", SOURCE).items()):
        exec(compile(_source(cell), f"<exercise {number} solution>", "exec"), vars(module))
    return module


# --------------------------------------------------------------------------- stubs, checks, solutions


@pytest.mark.parametrize("language", EDITIONS)
def test_every_exercise_has_one_stub_and_one_check_cell_using_the_stub_names(language: str) -> None:
    student = EDITIONS[language][0]
    stubs, checks = _tagged("exercise-stub", student), _tagged("exercise-check", student)
    assert sorted(stubs) == EXERCISES
    assert sorted(checks) == EXERCISES
    for number, names in EXERCISE_NAMES.items():
        assert f"check_exercise_{number}({', '.join(names)})" in _source(checks[number])


@pytest.mark.parametrize("kind", ["exercise-stub", "exercise-check", "exercise-hidden"])
@pytest.mark.parametrize("copy", [0, 1], ids=["student", "teacher"])
def test_the_chinese_editions_exercise_cells_are_the_english_ones(kind: str, copy: int) -> None:
    # So every test here that runs the English stubs, checks and solutions also speaks for the Chinese edition.
    english, chinese = _tagged(kind, EDITIONS["en"][copy]), _tagged(kind, EDITIONS["zh"][copy])
    assert sorted(chinese) == sorted(english)
    for number, cell in english.items():
        assert _source(chinese[number]) == _source(cell), f"{kind} of exercise {number}"
        assert chinese[number]["metadata"] == cell["metadata"], f"{kind} of exercise {number}"


@pytest.mark.parametrize("number", EXERCISES)
def test_untouched_stub_fails_its_check(number: int, capsys: pytest.CaptureFixture[str]) -> None:
    namespace = _run_stub(number)
    for name in EXERCISE_NAMES[number]:
        assert name in namespace, f"the exercise {number} stub does not define {name}"
    result = check_exercise(number, namespace)
    assert not result.passed
    assert capsys.readouterr().out.startswith(f"✘ Exercise {number}: not yet — ")


@pytest.mark.parametrize("number", EXERCISES)
def test_solution_passes_its_check(number: int, capsys: pytest.CaptureFixture[str]) -> None:
    result = check_exercise(number, vars(_solutions()))
    assert result.passed, result.problems
    assert result.problems == ()
    assert capsys.readouterr().out == f"✔ Exercise {number} passed\n"


@pytest.mark.parametrize("language", EDITIONS)
@pytest.mark.parametrize("number", EXERCISES)
def test_saved_notebook_shows_what_the_check_says_about_the_stub(
    number: int, language: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The notebook is saved with untouched stubs: its outputs must be today's "not yet", not a passed run,
    # in the edition's language (its kernel ran in notebooks/<language>; CAL_LANG stands in for that here).
    monkeypatch.setenv("CAL_LANG", language)
    cell = _tagged("exercise-check", EDITIONS[language][0])[number]
    saved = "".join("".join(output.get("text", "")) for output in cell["outputs"])
    check_exercise(number, _run_stub(number))
    assert saved == capsys.readouterr().out
    assert saved.startswith(f"✘ Exercise {number}: not yet" if language == "en" else f"✘ 练习 {number}：还没通过")


@pytest.mark.parametrize("language", EDITIONS)
def test_solutions_are_not_in_the_exercise_book(language: str) -> None:
    # Fragments only the solutions contain: the exercise book must not give them away.
    student = "\n".join(_source(cell) for cell in _cells(EDITIONS[language][0]))
    teacher = "\n".join(_source(cell) for cell in _cells(EDITIONS[language][1]))
    for fragment in ("error.with_usage(usage)", 'role="user"', "calls[decoded[", '"E": 1,', "BEGIN SOLUTION"):
        assert fragment in teacher
        assert fragment not in student
    assert not (ROOT / "notebooks" / "solutions").exists(), "solutions must not ship beside the student copy"


@pytest.mark.parametrize("language", EDITIONS)
def test_notebook_headings_are_bilingual_and_the_blog_is_cited_once(language: str) -> None:
    student = EDITIONS[language][0]
    headings = [
        line
        for cell in _cells(student)
        if cell["cell_type"] == "markdown"
        for line in _source(cell).splitlines()
        if line.startswith("#")
    ]
    assert len([h for h in headings if h.startswith("## ")]) >= 8
    for heading in headings:
        assert re.search(r"[\u4e00-\u9fff]", heading), f"heading without a Chinese title: {heading}"
    assert student.read_text(encoding="utf-8").count(BLOG_URL) == 1


# --------------------------------------------------------------------------- the checks never raise


@pytest.mark.parametrize(
    ("check", "arguments"),
    [
        (check_exercise_1, (None, None)),
        (check_exercise_2, (42,)),
        (check_exercise_3, (["A", 1],)),
        (check_exercise_4, (None,)),
        (check_exercise_5, ("not a function",)),
        (check_exercise_6, (print,)),
    ],
)
def test_check_reports_garbage_instead_of_raising(
    check: Callable[..., ExerciseVerdict], arguments: tuple[Any, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    result = check(*arguments)
    assert not result.passed
    assert "not yet" in capsys.readouterr().out


def test_check_reports_a_crash_in_learner_code_by_name() -> None:
    def crashes(value: Any) -> dict[str, Any]:
        raise RuntimeError("oops")

    result = check_exercise_2(crashes)
    assert result.problems == ("your code raised RuntimeError: 'oops'",)


def test_a_problem_quoting_the_learners_escape_codes_is_printed_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    def clears_the_screen(value: Any) -> dict[str, Any]:
        raise InvalidModelOutputError("\x1b[2J\x07", layer=ValidationLayer.TOP_LEVEL_OBJECT)

    result = check_exercise_2(clears_the_screen)
    printed = capsys.readouterr().out
    assert "\x1b" not in printed + result.summary() and "\\x1b[2J\\x07" in printed, printed


def test_a_crash_whose_message_cannot_be_shown_is_still_reported() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no words")

    def crashes(value: Any) -> dict[str, Any]:
        raise Unprintable

    result = check_exercise_2(crashes)
    assert result.problems == ('your code raised Unprintable: "(the error\'s message cannot be shown)"',)


def test_check_exercise_says_which_name_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    result = check_exercise(4, {})
    assert not result.passed
    assert "MyJsonTextAdapter is not defined yet" in capsys.readouterr().out
    with pytest.raises(ValueError, match="there is no exercise 9"):
        check_exercise(9, {})


def test_not_implemented_is_reported_as_such() -> None:
    def stub(value: Any) -> Any:
        raise NotImplementedError

    assert check_exercise_5(stub).problems == ("not implemented yet (the stub still raises NotImplementedError)",)


# --------------------------------------------------------------------------- plausible wrong answers


def _encode(**options: Any) -> Callable[[Any], str]:
    settings: dict[str, Any] = {
        "ensure_ascii": False,
        "sort_keys": True,
        "separators": (",", ":"),
        "allow_nan": False,
    } | options
    return lambda value: json.dumps(value, **settings)


def _rejected_as(role: str = "user", type_name: str = "tool_call_rejected") -> Callable[[ToolCallRejected], Any]:
    encode = _encode()
    return lambda item: ProviderMessage(
        role,
        encode({"type": type_name, "call_id": item.call_id, "tool_name": item.tool_name, "reason": item.reason}),
    )


@pytest.mark.parametrize(
    ("encoder", "rejected", "expected_problem"),
    [
        (_encode(sort_keys=False), _rejected_as(), "does not sort keys"),
        (_encode(separators=None), _rejected_as(), "is not compact"),
        (_encode(ensure_ascii=True), _rejected_as(), "escapes Chinese text"),
        (_encode(allow_nan=True), _rejected_as(), "wrote NaN"),
        (_encode(), _rejected_as(role="assistant"), "the role is 'assistant'"),
        (_encode(), _rejected_as(type_name="tool_result"), "\"type\" is 'tool_result'"),
        (_encode(), lambda item: ProviderMessage("user", _encode()({"call_id": item.call_id})), "keys are"),
        (
            _encode(),
            lambda item: ProviderMessage(
                "user", _encode(sort_keys=False)({"type": "tool_call_rejected", **_row(item)})
            ),
            "not encoded the series' way",
        ),
        (
            _encode(),
            lambda item: ProviderMessage(
                "user", _encode()({"type": "tool_call_rejected", **_row(item), "call_id": item.call_id.lower()})
            ),
            "keep it verbatim",
        ),
    ],
)
def test_check_1_catches(
    encoder: Callable[[Any], str], rejected: Callable[[ToolCallRejected], Any], expected_problem: str
) -> None:
    result = check_exercise_1(encoder, rejected)
    assert not result.passed
    assert any(expected_problem in problem for problem in result.problems), result.problems


def _row(item: ToolCallRejected) -> dict[str, str]:
    return {"call_id": item.call_id, "tool_name": item.tool_name, "reason": item.reason}


def _layer_2(*, reject_empty: bool = False, accept_lists: bool = False, **overrides: Any) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        allowed = (dict, list) if accept_lists else dict
        if isinstance(value, allowed) and not (reject_empty and not value):
            return overrides.get("returned", value)
        raise overrides.get("exception") or InvalidModelOutputError(
            overrides.get("message", "model output must be an object, found something else"),
            layer=overrides.get("layer", ValidationLayer.TOP_LEVEL_OBJECT),
            expected=overrides.get("expected", "a JSON object"),
            found=overrides.get("found", type(value).__name__),
        )

    return check


@pytest.mark.parametrize(
    ("implementation", "expected_problem"),
    [
        (_layer_2(reject_empty=True), "it rejected the object {}"),
        (_layer_2(accept_lists=True), "was let through"),
        (_layer_2(layer=ValidationLayer.ACTION_TYPE), "expected TOP_LEVEL_OBJECT"),
        (_layer_2(message="not a dict"), "start it 'model output must be an object'"),
        (_layer_2(found=None), "does not fill expected= and found="),
        # the workbook's rule: each field says what it means (placeholders pass a truthiness test)
        (_layer_2(expected="?"), "does not say that an object was expected"),
        (_layer_2(found="?"), "does not say what came instead"),
        # a found= that names every kind always names the right one: it says nothing about this value
        (_layer_2(found="not an object (array/string/number/true/false/null)"), "which also names"),
        (_layer_2(exception=TypeError("not a dict")), "raised TypeError, not InvalidModelOutputError"),
        (_layer_2(returned=None), "return the object itself"),
    ],
)
def test_check_2_catches(implementation: Callable[[Any], Any], expected_problem: str) -> None:
    result = check_exercise_2(implementation)
    assert not result.passed
    assert any(expected_problem in problem for problem in result.problems), result.problems


@pytest.mark.parametrize(
    ("changes", "expected_problem"),
    [
        # a duplicate key taken for a field problem: the rule to reread is layer 1's, and no label is named
        ({"E": 4}, "1 of 10 predictions are wrong. Reread the rules of: layer 1 (JSON syntax); the first"),
        ({"F": 1, "I": 4}, "2 of 10 predictions are wrong. Reread the rules of: layer 2 (top-level object); what the"),
        ({"C": "3"}, "C: '3' is not a prediction"),
        ({"D": True}, "D: True is not a prediction"),
        ({"A": 0}, "A: 0 is not a prediction"),
        ({"K": 1}, "unknown labels K"),
    ],
)
def test_check_3_catches(changes: dict[str, Any], expected_problem: str) -> None:
    predictions = dict(_solutions().predictions) | changes
    result = check_exercise_3(predictions)
    assert not result.passed
    assert any(expected_problem in problem for problem in result.problems), result.problems


@pytest.mark.parametrize("label", list(PREDICTION_OUTPUTS))
def test_check_3_never_says_which_predictions_are_wrong(label: str) -> None:
    # A rerun that named the wrong labels would find the answers without thinking: it says how many, and which rule.
    predictions = dict(_solutions().predictions)
    predictions[label] = 2 if predictions[label] != 2 else 3
    (problem,) = check_exercise_3(predictions).problems
    assert problem.startswith("1 of 10 predictions are wrong. Reread the rules of: ")
    assert not re.search(r"\b[A-J]\b", problem), problem


def test_check_3_accepts_validation_layers_and_names_a_missing_label() -> None:
    as_layers = {k: None if v is None else ValidationLayer(v) for k, v in _solutions().predictions.items()}
    assert check_exercise_3(as_layers).passed
    del as_layers["J"]
    assert check_exercise_3(as_layers).problems == ("no prediction for J",)


def test_check_3_answers_come_from_the_parser() -> None:
    # The solutions' predictions agree with diagnose(), which is what the check asks.
    for label, text in PREDICTION_OUTPUTS.items():
        predicted = _solutions().predictions[label]
        try:
            parse_json_action(text)
        except InvalidModelOutputError as error:
            assert error.layer == predicted, label
        else:
            assert predicted is None, label


def _adapter(on_invalid: str, *, wrap_provider_error: bool = True) -> type:
    class Adapter:
        def __init__(self, provider: Any) -> None:
            self._provider = provider

        def complete(self, history: Sequence[Any], tools: Sequence[Any], budget: Any) -> ModelResponse:
            try:
                raw = self._provider.complete(
                    messages=build_provider_messages(history), tools=tools, max_output_tokens=budget.max_output_tokens
                )
            except ProviderError as error:
                if not wrap_provider_error:
                    raise
                raise ModelProviderError(str(error)) from error
            usage = TokenUsage(raw.input_tokens, raw.output_tokens)
            try:
                return ModelResponse(parse_json_action(raw.text), usage)
            except InvalidModelOutputError as error:
                if on_invalid == "reraise":
                    raise
                if on_invalid == "new error":
                    raise InvalidModelOutputError(str(error), layer=error.layer, usage=usage) from error
                if on_invalid == "zero usage":
                    raise error.with_usage(TokenUsage(0, 0)) from error
                if on_invalid == "no cause":
                    raise error.with_usage(usage)  # noqa: B904 (the mistake this case is about)
                if on_invalid == "swallow":
                    return ModelResponse(parse_json_action('{"type":"final_answer","content":"?"}'), usage)
                raise error.with_usage(usage) from error

    return Adapter


@pytest.mark.parametrize(
    ("adapter_class", "expected_problem"),
    [
        (_adapter("reraise"), "carries usage=None"),
        (_adapter("zero usage"), "must carry TokenUsage(80, 7)"),
        (_adapter("new error"), "lost the raw text the parser recorded"),
        (_adapter("swallow"), "must raise InvalidModelOutputError"),
        (_adapter("no cause"), "raise error.with_usage(usage) from error"),
        (_adapter("keep", wrap_provider_error=False), "a ProviderError escaped"),
    ],
)
def test_check_4_catches(adapter_class: type, expected_problem: str) -> None:
    assert check_exercise_4(_adapter("keep")).passed  # the helper's correct variant, so each case differs in one way
    result = check_exercise_4(adapter_class)
    assert not result.passed
    assert any(expected_problem in problem for problem in result.problems), result.problems


def _good_correction(error: InvalidModelOutputError) -> str:
    return str(_solutions().correction_message(error))


@pytest.mark.parametrize(
    ("implementation", "expected_problem"),
    [
        (lambda error: f"Invalid output: {error}. Send exactly one JSON object.", "does not name the layer"),
        (lambda error: _good_correction(error).replace("exactly one", "one"), "exactly one JSON object"),
        (lambda error: _good_correction(error).replace(str(error.found), "?"), "what was found"),
        (lambda error: _good_correction(error).replace(str(error.expected), "?"), "what was expected"),
        (lambda error: _good_correction(error) + f" Your reply was: {error.raw_text}", "echoes the whole raw reply"),
        (lambda error: _good_correction(error) + " Please." * 80, "the limit is 600"),
        (lambda error: None, "must return a str"),
        # keyword stuffing: naming every layer would "name" the right one whatever went wrong
        (lambda error: _good_correction(error) + " (layer 1, layer 2, layer 3 or layer 4)", "name only the layer"),
    ],
)
def test_check_5_catches(implementation: Callable[[InvalidModelOutputError], Any], expected_problem: str) -> None:
    result = check_exercise_5(implementation)
    assert not result.passed
    assert any(expected_problem in problem for problem in result.problems), result.problems


def _tool_traffic(messages: Sequence[ProviderMessage]) -> list[dict[str, Any]]:
    decoded = []
    for message in messages:
        try:
            value = json.loads(message.content)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") in ("tool_call", "tool_result"):
            decoded.append(value)
    return decoded


def _pair_by_position(messages: Sequence[ProviderMessage]) -> list[tuple[str, str, str]]:
    traffic = _tool_traffic(messages)
    calls = [t for t in traffic if t["type"] == "tool_call"]
    results = [t for t in traffic if t["type"] == "tool_result"]
    if len(results) > len(calls):
        raise ValueError("more results than calls")
    return [(r["call_id"], c["tool_name"], r["content"]) for c, r in zip(calls, results, strict=False)]


def _pair_ignoring_case(messages: Sequence[ProviderMessage]) -> list[tuple[str, str, str]]:
    calls: dict[str, str] = {}
    pairs = []
    for t in _tool_traffic(messages):
        if t["type"] == "tool_call":
            calls[t["call_id"].lower()] = t["tool_name"]
        elif t["call_id"].lower() not in calls:
            raise ValueError("unknown call")
        else:
            pairs.append((t["call_id"], calls[t["call_id"].lower()], t["content"]))
    return pairs


def _pair_skipping_orphans(messages: Sequence[ProviderMessage]) -> list[tuple[str, str, str]]:
    calls = {t["call_id"]: t["tool_name"] for t in _tool_traffic(messages) if t["type"] == "tool_call"}
    return [
        (t["call_id"], calls[t["call_id"]], t["content"])
        for t in _tool_traffic(messages)
        if t["type"] == "tool_result" and t["call_id"] in calls
    ]


def _pair_assuming_all_json(messages: Sequence[ProviderMessage]) -> list[tuple[str, str, str]]:
    for message in messages:
        json.loads(message.content)
    return _solutions().pair_results(messages)  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("implementation", "expected_problem"),
    [
        (_pair_by_position, "match on call_id exactly, not on position"),
        (_pair_ignoring_case, "match on call_id exactly"),
        (_pair_skipping_orphans, "matches no earlier call was accepted"),
        (_pair_assuming_all_json, "your code raised JSONDecodeError"),
        (lambda messages: [], "expected 3 pairs"),
    ],
)
def test_check_6_catches(implementation: Callable[[Sequence[ProviderMessage]], Any], expected_problem: str) -> None:
    result = check_exercise_6(implementation)
    assert not result.passed
    assert any(expected_problem in problem for problem in result.problems), result.problems


def test_the_graders_cases_replace_the_checks_own() -> None:
    # The outside judge runs these very checks on cases drawn fresh: answers copied from the self-check's cases
    # pass it, and fail the same check on other cases.
    seen = ({"tool_name": "read_file", "arguments": {"path": "a.txt", "limit": 2}}, {"content": "权限不足"})
    seen += ({"b": [1.5, None, True], "a": {"路径": "说明.md", "z": 0}},)

    def copied_encoder(value: Any) -> str:
        if isinstance(value, dict) and "score" in value:
            raise ValueError("NaN is not JSON")
        return encode_json(value) if value in seen else json.dumps(value)

    names = {"my_encode_json": copied_encoder, "encode_tool_call_rejected": _solutions().encode_tool_call_rejected}
    assert check_exercise(1, names).passed
    assert not check_exercise(1, names, sample={"x": "路"}).passed

    keep = _adapter("keep")

    class CopiedTokens:
        def __init__(self, provider: Any) -> None:
            self._adapter = keep(provider)

        def complete(self, history: Sequence[Any], tools: Sequence[Any], budget: Any) -> ModelResponse:
            try:
                response: ModelResponse = self._adapter.complete(history, tools, budget)
            except InvalidModelOutputError as error:
                raise error.with_usage(TokenUsage(80, 7)) from error.__cause__
            return response

    assert check_exercise(4, {"MyJsonTextAdapter": CopiedTokens}).passed
    fresh = check_exercise(4, {"MyJsonTextAdapter": CopiedTokens}, reply="[]", usage=TokenUsage(41, 9))
    assert any("must carry TokenUsage(41, 9)" in problem for problem in fresh.problems), fresh.problems


def test_a_value_whose_repr_raises_is_named_in_its_problem_line() -> None:
    # The checks show values with wire.shown, the workbook's one cut repr: a learner's __repr__ that raises is
    # named in the problem, so the learner still learns which rule failed.
    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    result = check_exercise_2(lambda value: Unprintable() if isinstance(value, dict) else value)
    assert result.problems[0] == (
        "for the object {'type': 'final_answer', 'content': 'hi'} it returned <repr raised RuntimeError>; "
        "return the object itself"
    )
