"""The outside judge on its own, without nbgrader: hostile code in the sandboxed child changes no verdict.

The end-to-end runs (test_grading_workflow.py, test_build_it_yourself_grading.py) grade hostile submissions
through nbgrader; these tests pin the pieces: the child's world, the channel's limits, and each judge's verdict
for the untouched copy, the teacher's answers and a hostile one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from course_scripts import release

from codeagent_lite.workbook.sandbox import SandboxStopped, isolated

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "classroom"))

from outside_grade import KERNEL_LIMITS, _kernel_sandbox, judged_outputs  # noqa: E402  (classroom/: flat modules)
from outside_judge import Verdict, judge_build, judge_exercises, sandboxed  # noqa: E402

STUBS = ROOT / "notebooks" / "stubs" / "my_json_text"


def _answer_sources(notebook: Path, replaced: dict[str, str] | None = None) -> list[str]:
    cells = nbformat.read(notebook, as_version=4).cells
    chosen = replaced or {}
    return [
        chosen.get(cell.metadata["nbgrader"]["grade_id"], cell.source)
        for cell in cells
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
    ]


def _ask_once(source: str, timeout: float = 3.0) -> object:
    with sandboxed({"mode": "answers", "sources": [source]}, full_package=True, deadline=timeout) as child:
        return child.ask({"op": "call", "target": "f", "args": []})


def test_the_child_sees_no_secret_and_no_course(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-for-the-test")
    source = (
        "import os, pathlib\n"
        "def f():\n"
        "    return [*sorted(os.environ), pathlib.Path('" + str(ROOT / "solutions") + "').exists()]\n"
    )
    reply = _ask_once(source)
    assert "sk-secret" not in repr(reply) and "OPENAI_API_KEY" not in repr(reply)
    assert isinstance(reply, dict)
    names = {item for item in reply["returned"] if isinstance(item, str)}
    assert names <= {"CAL_LANG", "LANG", "LC_ALL", "PATH", "PWD", "PYTHONHASHSEED"}
    if isolated():
        assert reply["returned"][-1] is False  # the repository's solutions/ is not there


@pytest.mark.parametrize(
    ("label", "body"),
    [
        ("hang", "    while True:\n        pass\n"),
        ("half an answer", '    os.write(CHANNEL, b\'{"kind": "part", \')\n    time.sleep(60)\n'),
        ("garbage", "    os.write(CHANNEL, b'\\x00garbage\\n')\n    time.sleep(60)\n"),
        ("deeply nested", "    os.write(CHANNEL, b'[' * 200000 + b'\\n')\n    time.sleep(60)\n"),
        ("a huge answer", "    os.write(CHANNEL, b'[' + b'1,' * 9_000_000)\n    time.sleep(60)\n"),
    ],
)
def test_a_misbehaving_child_gets_a_clear_stop_within_the_deadline(label: str, body: str) -> None:
    # The child's own end of the channel back, straight to the pipe: the parent caps, times and parses it.
    source = "import os, time, sandbox_io\nCHANNEL = sandbox_io._channel_fd\ndef f():\n" + body
    started = time.monotonic()
    with pytest.raises(SandboxStopped):
        _ask_once(source, timeout=2.0)
    assert time.monotonic() - started < 10, label


def test_a_forked_survivor_is_killed_with_the_child(tmp_path: Path) -> None:
    source = "import os, time\ndef f():\n    if os.fork() == 0:\n        time.sleep(600)\n    return os.getpid()\n"
    with sandboxed({"mode": "answers", "sources": [source]}, full_package=True) as child:
        child.ask({"op": "call", "target": "f", "args": []})
        pid = child.pid
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_notebook_05_the_teachers_answers_pass_and_the_release_scores_nothing() -> None:
    edition = release.EDITIONS[0]
    solved = judge_exercises(_answer_sources(release.source_notebook(edition)), seed=7)
    untouched = judge_exercises(_answer_sources(edition.student_copy), seed=7)
    assert set(solved) == set(untouched)
    assert all(verdict.passed for verdict in solved.values()), solved
    assert not any(verdict.passed for verdict in untouched.values())


PATCH = """\
import builtins
from codeagent_lite.workbook import exercise_checks

for _n in range(1, 7):
    setattr(exercise_checks, f"check_exercise_{_n}", lambda *a, _n=_n: exercise_checks.ExerciseVerdict(_n, ()))
builtins.print = lambda *a, **k: None
"""


def test_notebook_05_patching_the_checks_changes_no_verdict() -> None:
    edition = release.EDITIONS[0]
    verdicts = judge_exercises(_answer_sources(edition.student_copy, {"exercise_1_answer": PATCH}), seed=3)
    assert not any(verdict.passed for verdict in verdicts.values())


FORWARD_AFTER_RELOAD = """\
import importlib
import codeagent_lite.json_action_parser as _parser

importlib.reload(_parser)  # would bring the real layer 2 back into the child that lets everything through


def my_check_top_level_object(value):
    return _parser.check_top_level_object(value)
"""


def test_notebook_05_reloading_the_package_does_not_undo_exercise_2s_own_work_trap() -> None:
    edition = release.EDITIONS[0]
    answers = _answer_sources(release.source_notebook(edition), {"exercise_2_answer": FORWARD_AFTER_RELOAD})
    verdicts = judge_exercises(answers, seed=11)
    assert not verdicts["exercise_2_hidden"].passed, verdicts["exercise_2_hidden"]


PREDICTIONS_BY_ANOTHER_NAME = """
from codeagent_lite import diagnose
from codeagent_lite.workbook.exercise_checks import PREDICTION_OUTPUTS

globals().update(predictions={label: diagnose(text).rejected_by for label, text in PREDICTION_OUTPUTS.items()})
"""


def test_notebook_05_predictions_computed_however_spelled_lose_the_hidden_point() -> None:
    """The untouched placeholders, then the answers computed without a statement that assigns predictions."""
    edition = release.EDITIONS[0]
    untouched = _answer_sources(edition.student_copy)
    cell = next(source for source in untouched if "predictions = {" in source)
    verdicts = judge_exercises([s + PREDICTIONS_BY_ANOTHER_NAME if s is cell else s for s in untouched], seed=19)
    assert verdicts["exercise_3_check"].passed, verdicts["exercise_3_check"]
    assert not verdicts["exercise_3_hidden"].passed
    every_label = ", ".join(map(repr, "ABCDEFGHIJ"))
    assert f"computed, not predicted: {every_label} in the notebook differ" in verdicts["exercise_3_hidden"].text


HANGS = """\
def my_check_top_level_object(value):
    while True:
        pass
"""


def test_notebook_05_one_exercise_that_hangs_costs_only_its_own_points() -> None:
    """Every other answer is the teacher's: they keep their points (one shared child, once stopped, took them all)."""
    edition = release.EDITIONS[0]
    answers = _answer_sources(release.source_notebook(edition), {"exercise_2_answer": HANGS})
    verdicts = judge_exercises(answers, seed=13)
    assert {name for name, verdict in verdicts.items() if not verdict.passed} == {
        "exercise_2_check",
        "exercise_2_hidden",
    }, verdicts


def test_notebook_05_an_answer_cell_that_never_ends_costs_no_other_cell_its_points() -> None:
    """Every child runs all the answer cells first: an endless loop at the top of the ungraded exercise 6 made
    each child miss its deadline, and every graded cell failed; nbgrader's kernel interrupts such a cell."""
    edition = release.EDITIONS[0]
    answers = _answer_sources(release.source_notebook(edition), {"exercise_6_answer": "while True:\n    pass\n"})
    verdicts = judge_exercises(answers, seed=19)
    assert [name for name, verdict in verdicts.items() if not verdict.passed] == [], verdicts


SLOW_EXERCISE_1 = """

import time as _time

_own_encode_json = my_encode_json


def my_encode_json(*args, **kwargs):
    _time.sleep(0.7)  # well under a request's 10 s, but the check asks many times
    return _own_encode_json(*args, **kwargs)
"""


def test_notebook_05_an_exercise_has_one_time_budget_for_all_its_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers slow on every call each stayed under a request's 10 s: one submission took 380 s to grade."""
    import outside_judge

    monkeypatch.setattr(outside_judge, "EXERCISE_SECONDS", 2.0)
    edition = release.EDITIONS[0]
    teachers = _answer_sources(release.source_notebook(edition))
    first = next(s for s in teachers if "def my_encode_json" in s)
    answers = [s + SLOW_EXERCISE_1 if s is first else s for s in teachers]
    started = time.monotonic()
    verdicts = judge_exercises(answers, seed=17)
    assert time.monotonic() - started < 20
    assert not verdicts["exercise_1_check"].passed and "took its 2 s" in verdicts["exercise_1_check"].text, verdicts
    assert all(verdict.passed for name, verdict in verdicts.items() if not name.startswith("exercise_1")), verdicts


def test_notebook_07_the_solution_passes_the_stubs_score_nothing(tmp_path: Path) -> None:
    solved = judge_build(ROOT / "solutions" / "my_json_text", seed=5)
    assert all(verdict.passed for verdict in solved.values()), solved
    shutil.copytree(STUBS, tmp_path / "my_json_text")
    untouched = judge_build(tmp_path / "my_json_text", seed=5)
    assert not any(verdict.passed for verdict in untouched.values())


def test_notebook_07_a_folder_that_forwards_to_the_reference_scores_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "my_json_text"
    shutil.copytree(STUBS, folder)
    for name in ("json_text_messages", "json_text_adapter", "json_action_parser"):
        (folder / f"{name}.py").write_text(
            "import importlib\n"
            f"_r = importlib.import_module('codeagent_lite.' + {name[::-1]!r}[::-1])\n"
            "globals().update({k: v for k, v in vars(_r).items() if not k.startswith('__')})\n",
            encoding="utf-8",
        )
    verdicts = judge_build(folder, seed=5)
    assert not any(verdict.passed for verdict in verdicts.values())
    assert "imports the reference one" in verdicts["step_3_hidden"].text


def test_a_failed_cell_shows_an_error_and_no_pass_mark() -> None:
    outputs = judged_outputs(Verdict(False, "12 of 12 checks pass\n✘ step 1 scores 0: the stub"))
    assert [output.output_type for output in outputs] == ["stream", "error"]
    assert outputs[-1].evalue == "✘ step 1 scores 0: the stub"
    assert [output.output_type for output in judged_outputs(Verdict(True, "✔ passed"))] == ["stream"]


def test_the_predictions_cell_is_parsed_only_when_it_is_one_and_short() -> None:
    """Exercise 3's trap parses cells in the teacher's process: a 4 MB cell cost 2.5 GB there."""
    from codeagent_lite.workbook.exercise_checks import MAX_PREDICTIONS_CELL_CHARS, written_predictions

    long_cell = "predictions = {'a': 1}\n" + "x = 1\n" * (MAX_PREDICTIONS_CELL_CHARS // 6)
    assert written_predictions(["x = 1\n" * 500_000, "predictions = {'a': 1}"]) == {"a": 1}
    assert written_predictions([long_cell]) is None
    assert written_predictions(["predictions = {}\x00", "(" * 1000, "predictions = {'a': 1}("]) is None
    assert written_predictions(["predictions = {}\npredictions['a'] = 1\npredictions['b'] = f(2)"]) == {"a": 1}


def test_a_verdict_quoting_the_students_escape_codes_carries_them_escaped() -> None:
    outputs = judged_outputs(Verdict(False, "✘ your code raised \x1b[2JEvil: \x07"))
    assert all("\x1b" not in str(output) and "\x07" not in str(output) for output in outputs)
    assert outputs[-1].evalue == "✘ your code raised \\x1b[2JEvil: \\x07"


FORK_BOMB = """\
import os, time
forked = 0
try:
    for _ in range(1000):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
except OSError:
    pass
print(os.getuid(), forked)
"""


@pytest.mark.skipif(not (hasattr(os, "geteuid") and os.geteuid() == 0 and isolated()), reason="root with bubblewrap")
def test_the_autograde_kernel_runs_as_a_uid_of_its_own_and_a_fork_bomb_is_bounded(tmp_path: Path) -> None:
    notebook_dir = tmp_path / "course" / "autograded" / "ada" / "build"
    notebook_dir.mkdir(parents=True)
    connection = tmp_path / "kernel.json"
    connection.write_text("{}")
    connection.chmod(0o600)
    command = _kernel_sandbox([sys.executable, "-c", FORK_BOMB], notebook_dir, tmp_path / "course", str(connection))
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    uid, forked = (int(word) for word in done.stdout.split())
    assert uid != 0
    assert forked < KERNEL_LIMITS.processes
    assert time.monotonic() - started < 60  # the sleeping children died with the kernel's pid namespace
    assert _gone(uid, within=10.0)  # killed with the namespace's init as the kernel ends (reaped a moment later)


CLOSED_CHECKOUT_PROBE = """\
import os, sys, codeagent_lite
print(codeagent_lite.MARK, os.path.exists(sys.argv[1] + "/secret.txt"), os.listdir(sys.argv[1] + "/solutions"))
"""


@pytest.mark.skipif(not (hasattr(os, "geteuid") and os.geteuid() == 0 and isolated()), reason="root with bubblewrap")
def test_the_autograde_kernel_starts_from_a_checkout_closed_to_other_accounts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A class hub's checkout is 0700 (the hub refuses another mode) with its .venv inside: the kernel's own uid
    still reaches its interpreter and the package, and nothing else of the checkout."""
    checkout = tmp_path / "checkout"
    (checkout / "codeagent_lite").mkdir(parents=True)
    (checkout / "codeagent_lite" / "__init__.py").write_text('MARK = "package"\n')
    (checkout / "solutions").mkdir()
    (checkout / "solutions" / "answers.md").write_text("the teacher's answers")
    (checkout / "secret.txt").write_text("the teacher's")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(checkout / ".venv")], check=True)
    checkout.chmod(0o700)
    notebook_dir = tmp_path / "course" / "autograded" / "ada" / "build"
    notebook_dir.mkdir(parents=True)
    connection = tmp_path / "kernel.json"
    connection.write_text("{}")
    monkeypatch.setenv("PYTHONPATH", str(checkout))
    python = checkout / ".venv" / "bin" / "python"
    kernel = [str(python), "-c", CLOSED_CHECKOUT_PROBE, str(checkout)]
    command = _kernel_sandbox(
        kernel, notebook_dir, tmp_path / "course", str(connection), repo=checkout, prefix=checkout / ".venv"
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["package", "False", "[]"]


INTERRUPTIBLE = """\
import os, signal, time
signal.signal(signal.SIGINT, lambda *_: (os.write(1, b"interrupted\\n"), os._exit(0)))  # print could re-enter stdout
print("running", flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not isolated(), reason="bubblewrap")
def test_interrupting_the_autograde_kernel_reaches_the_kernel_and_does_not_kill_it(tmp_path: Path) -> None:
    """nbgrader stops a cell past its timeout with SIGINT to the kernel's process group (jupyter_client's
    interrupt): it killed bwrap, and the kernel with it, so one endless loop stopped a whole submission's grading."""
    notebook_dir = tmp_path / "course" / "autograded" / "ada" / "exercises"
    notebook_dir.mkdir(parents=True)
    connection = tmp_path / "kernel.json"
    connection.write_text("{}")
    command = _kernel_sandbox([sys.executable, "-c", INTERRUPTIBLE], notebook_dir, tmp_path / "course", str(connection))
    kernel = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert kernel.stdout is not None and kernel.stdout.readline() == "running\n"
        os.killpg(kernel.pid, signal.SIGINT)
        said, _ = kernel.communicate(timeout=30)
    finally:
        kernel.kill()
    assert (said, kernel.returncode) == ("interrupted\n", 0)


def _gone(uid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while any(pid.isdigit() and _owner(pid) == uid for pid in os.listdir("/proc")):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _owner(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def test_notebook_07_a_sibling_that_fails_to_load_costs_its_own_step_only(tmp_path: Path) -> None:
    folder = tmp_path / "my_json_text"
    shutil.copytree(ROOT / "solutions" / "my_json_text", folder)
    (folder / "json_action_parser.py").write_text(
        "from codeagent_lite.json_action_parser import parse_json_action\n", encoding="utf-8"
    )
    verdicts = judge_build(folder, seed=5)
    passed = {grade_id for grade_id, verdict in verdicts.items() if verdict.passed}
    assert passed == {"step_1_check", "step_1_hidden", "step_2_check", "step_2_hidden"}, verdicts


LOAD_THE_STEPS = """\
import sys
from traitlets.config.loader import PyFileConfigLoader
from traitlets.utils.importstring import import_item

config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
steps = [import_item(name) for name in config.Autograde.autograde_preprocessors]
print(sys.modules["outside_grade"].__file__, sum(step.__module__ == "outside_grade" for step in steps))
"""


def test_nbgrader_loads_the_outside_steps_from_the_course_folder_it_runs_in(tmp_path: Path) -> None:
    """``nbgrader autograde`` runs from the course folder, and its console script does not put that folder on
    ``sys.path`` (``-P`` here: neither does this probe): the config must, or autograde cannot import its steps."""
    course = release.copy_course(tmp_path / "course")
    done = subprocess.run(
        [sys.executable, "-P", "-c", LOAD_THE_STEPS],
        cwd=course,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str((course / "outside_grade.py").resolve()), "2"]
