"""Hostile learner folders: each is the untouched stubs plus code that attacks verify, and each must
get the stubs' verdict (no check passes), within a bound on time, leaving no process behind and
reading no secret. The attacks are the ones issue 17 lists: forged verdicts, a broken channel,
survivors, the environment, a memory bomb, delegation to the reference by strings or by path.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sandbox_watch import sandbox_processes

from codeagent_lite.workbook import sandbox
from codeagent_lite.workbook.verify import VerifyReport, verify

ROOT = Path(__file__).resolve().parent.parent
STUBS = ROOT / "notebooks" / "stubs" / "my_json_text"
SOLUTION_PARSER = ROOT / "solutions" / "my_json_text" / "json_action_parser.py"
SECRET = "sk-test-hostile-9876543210"
LIMIT = 1.5
BOUND = 40.0  # seconds for a whole verify of one hostile folder, on a loaded machine

CHANNEL = "import os as _os, sys as _sys\n_fd = int(_sys.argv[1])\n"
ATTACKS = {
    "forged final message": CHANNEL
    + '_os.write(_fd, b\'{"kind": "final", "data": {"finished": true, "passed": 59}}\\n\')\n',
    "forged parts for every check": CHANNEL
    + "for _n in range(1, 24):\n"
    + "    for _s in (1, 2, 3, 4):\n"
    + '        _os.write(_fd, (\'{"kind": "part", "data": {"done": "%d.%d", "passed": true, '
    + '"result": {"value": null}}}\\n\' % (_s, _n)).encode())\n',
    "patched sandbox_io": "import sandbox_io as _io\n_io.send = lambda data: None\n"
    "_io.send_part = lambda data: _io._write(\n"
    "    'part', {'done': data.get('done') or data.get('start'), 'passed': True}\n)\n",
    "patched probe runner": "import verify_probe as _vp\n_vp.run_probe = lambda *a, **k: {'value': {'passed': True}}\n",
    "garbage on the channel": CHANNEL + "_os.write(_fd, b'\\xff\\x00 verdict: pass\\n')\n",
    "half a message": CHANNEL + '_os.write(_fd, b\'{"kind": "part", "da\')\n',
    "200000 nested brackets": CHANNEL
    + "_os.write(_fd, b'{\"kind\": \"part\", \"data\": ' + b'[' * 200000 + b']' * 200000 + b'}\\n')\n",
    "a huge message": CHANNEL + '_os.write(_fd, b\'{"kind": "part", "data": "\' + b\'x\' * (600 * 2**20))\n',
    "forked survivor": "import os as _os, time as _t\nif _os.fork() == 0:\n    _os.setsid()\n"
    "    if _os.fork() == 0:\n        _t.sleep(300)\n    _os._exit(0)\n",
    "reads the environment": "import os as _os\n"
    "raise RuntimeError(repr([v for k, v in _os.environ.items() if 'KEY' in k or 'SECRET' in k]))\n",
    "memory bomb": "_hoard = bytearray(16 * 2**30)\n",
    "importlib by strings": "import importlib as _il\n"
    "_ref = _il.import_module('codeagent_' + 'lite.json_' + 'action_parser')\n"
    "def parse_json_action(raw_text):\n    return _ref.parse_json_action(raw_text)\n",
    "getattr on __import__": "_ref = getattr(__builtins__ if isinstance(__builtins__, dict) else vars(__builtins__), "
    "'get')('__import__')('codeagent_lite.json_text_messages', fromlist=['x'])\n"
    "build_provider_messages = _ref.build_provider_messages\n",
    "the solution by path": f"_src = open({str(SOLUTION_PARSER)!r}).read()\nexec(compile(_src, 'x', 'exec'))\n",
}


def hostile_folder(base: Path, name: str, attack: str) -> Path:
    folder = base / "my_json_text"
    shutil.copytree(STUBS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for file in ("json_text_messages.py", "json_text_adapter.py", "json_action_parser.py"):
        path = folder / file
        path.write_text(path.read_text(encoding="utf-8") + "\n\n# the attack\n" + attack, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[VerifyReport, float]]:
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("CAL_FAKE_API_KEY", SECRET)
    folders = {
        name: hostile_folder(tmp_path_factory.mktemp("hostile"), name, attack) for name, attack in ATTACKS.items()
    }

    def timed(folder: Path) -> tuple[VerifyReport, float]:
        started = time.monotonic()
        report = verify(folder, time_limit=LIMIT)
        return report, time.monotonic() - started

    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = {name: pool.submit(timed, folder) for name, folder in folders.items()}
            return {name: future.result() for name, future in futures.items()}
    finally:
        monkeypatch.undo()


NEEDS_BUBBLEWRAP = {"the solution by path", "forked survivor"}


def _unprotected(name: str) -> bool:
    """Without bubblewrap (allowed outside CI) files stay readable and a setsid'd grandchild may escape."""
    required = os.environ.get("CAL_REQUIRE_SANDBOX") == "1"
    return name in NEEDS_BUBBLEWRAP and not required and not sandbox.isolated()


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_hostile_folder_gets_the_stubs_verdict_in_bounded_time(
    judged: dict[str, tuple[VerifyReport, float]], name: str
) -> None:
    if _unprotected(name):
        pytest.skip("needs bubblewrap, which this machine lacks (CI requires it: CAL_REQUIRE_SANDBOX=1)")
    report, seconds = judged[name]
    assert report.passed == 0, str(report)
    assert report.exit_code == 1
    assert seconds < BOUND
    text = str(report) + report._repr_html_()
    assert SECRET not in text
    assert "Traceback" not in text
    assert all(line.isprintable() for line in text.splitlines())


def test_no_process_of_any_hostile_folder_survives(judged: dict[str, tuple[VerifyReport, float]]) -> None:
    assert judged
    if _unprotected("forked survivor"):
        pytest.skip("needs bubblewrap's pid namespace, which this machine lacks")
    assert sandbox_processes() == []


def test_delegating_to_the_reference_is_said_once_as_such(judged: dict[str, tuple[VerifyReport, float]]) -> None:
    for name in ("importlib by strings", "getattr on __import__"):
        text = str(judged[name][0])
        assert "imports the reference one (codeagent_lite.json_" in text, text
        assert text.count("imports the reference one") <= 3  # once per file at most


def _solution_with(tmp_path: Path, file: str, appended: str) -> Path:
    """The solution's folder, ``appended`` to one of its files; skipped where verify has no bubblewrap."""
    if _unprotected("importlib by strings"):
        pytest.skip("needs bubblewrap, which this machine lacks (CI requires it: CAL_REQUIRE_SANDBOX=1)")
    folder = tmp_path / "mine"
    shutil.copytree(SOLUTION_PARSER.parent, folder)
    with (folder / f"{file}.py").open("a", encoding="utf-8") as learners:
        learners.write(appended)
    return folder


def test_a_reference_import_is_blamed_on_the_file_that_makes_it(tmp_path: Path) -> None:
    """The adapter imports the learner's parser while it loads: the parser's reference import is the parser's."""
    reference_import = "\ntry:\n    import codeagent_lite.strict_json\nexcept ImportError:\n    pass\n"
    text = str(verify(_solution_with(tmp_path, "json_action_parser", reference_import), time_limit=10))
    assert "your json_action_parser.py imports the reference one (codeagent_lite.strict_json)" in text, text
    assert "your json_text_adapter.py imports the reference one" not in text, text
    assert "\n59 of 59 checks pass; mend the problem marked ! above\n" in text, text  # not "every check passes"


SLOW_CALLS = """
import time as _time

_complete = JsonTextModelAdapter.complete


def _slowly(self, history, tools, budget):
    for _ in range(4):  # 1.6 s of calls, each answered at once, within the stand-ins' eight
        self._provider.complete(messages=[], tools=tools, max_output_tokens=budget.max_output_tokens)
        _time.sleep(0.4)
    return _complete(self, history, tools, budget)


JsonTextModelAdapter.complete = _slowly
"""


def test_a_check_calling_the_provider_again_and_again_still_has_one_time_limit(tmp_path: Path) -> None:
    """Each answer of a stand-in used to restart the check's clock: a slow loop of calls ran past the limit."""
    report = verify(_solution_with(tmp_path, "json_text_adapter", SLOW_CALLS), step=2, time_limit=1)
    first = next(result for result in report.results if result.check.id == "2.1")
    assert not first.passed and "no answer within 1 s" in first.got, first.got


def test_a_broken_channel_is_named_not_a_traceback(judged: dict[str, tuple[VerifyReport, float]]) -> None:
    assert "broke its channel" in str(judged["200000 nested brackets"][0])
    assert "broke its channel" in str(judged["garbage on the channel"][0])


def _lookup_table_parser() -> str:
    """A parser that knows only verify's public cases: each text's answer, copied from the reference."""
    from codeagent_lite import json_action_parser
    from codeagent_lite.model_adapter import InvalidModelOutputError
    from codeagent_lite.workbook.contract import checks_up_to

    table: dict[str, tuple[str, object]] = {}
    for check in checks_up_to(3):
        if check.step != 3:
            continue
        text = check.probe()[0]["text"]
        try:
            table[text] = ("action", repr(json_action_parser.parse_json_action(text)))
        except InvalidModelOutputError as error:
            table[text] = ("error", (str(error), int(error.layer)))
    return (
        "from codeagent_lite.kernel_types import FinalAnswer, ToolCall\n"
        "from codeagent_lite.model_adapter import InvalidModelOutputError, ValidationLayer\n"
        f"_TABLE = {table!r}\n\n"
        "def parse_json_action(raw_text):\n"
        "    kind, answer = _TABLE.get(raw_text, ('error', ('model output must be valid JSON', 1)))\n"
        "    if kind == 'action':\n"
        "        return eval(answer)\n"
        "    raise InvalidModelOutputError(answer[0], layer=ValidationLayer(answer[1]))\n"
    )


def test_answers_learned_from_the_public_cases_fail_when_the_inputs_are_drawn_from_a_seed(tmp_path: Path) -> None:
    folder = tmp_path / "my_json_text"
    shutil.copytree(ROOT / "solutions" / "my_json_text", folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "json_action_parser.py").write_text(_lookup_table_parser(), encoding="utf-8")
    public = verify(folder, step=3)
    assert public.passed == len(public.results), str(public)
    seeded = verify(folder, step=3, seed=20261201)
    failed = {result.check.id for result in seeded.results if result.passed is False}
    assert {"3.1", "3.2", "3.3", "3.8", "3.9", "3.11", "3.12", "3.13", "3.14", "3.15"} <= failed
    assert {"3.16", "3.19", "3.20", "3.22", "3.23"} <= failed
    assert all(result.passed for result in seeded.results if result.check.step < 3)


# Step 1's file leaves a sleeper behind (a plain child, or a grandchild in a session of its own whose
# parent has exited) and notes its pid in the sandbox's working folder; step 2's file, loaded after
# the step boundary, reads /proc for it and says what it found in the error it raises at load.
SLEEPERS = {
    "a forked child": "import os as _os, time as _t\n"
    "_pid = _os.fork()\n"
    "if _pid == 0:\n    _t.sleep(300)\n    _os._exit(0)\n"
    "open('sleeper.pid', 'w').write(str(_pid))\n",
    "a double-forked setsid grandchild": "import os as _os, time as _t\n"
    "_first = _os.fork()\n"
    "if _first == 0:\n"
    "    _os.setsid()\n"
    "    _pid = _os.fork()\n"
    "    if _pid == 0:\n        _t.sleep(300)\n        _os._exit(0)\n"
    "    open('sleeper.pid', 'w').write(str(_pid))\n"
    "    _os._exit(0)\n"
    "_os.waitpid(_first, 0)\n",
}
LOOK_FOR_THE_SLEEPER = (
    "def _sleeper_state():\n"
    "    try:\n"
    "        pid = open('sleeper.pid').read()\n"
    "    except OSError:\n"
    "        return 'never noted'\n"
    "    try:\n"
    "        state = open('/proc/%s/stat' % pid).read().rpartition(')')[2].split()[0]\n"
    "    except OSError:\n"
    "        return 'gone'\n"
    "    return 'gone' if state in 'ZX' else 'alive'\n"
    "raise RuntimeError('step one sleeper: ' + _sleeper_state())\n"
)


@pytest.mark.parametrize("name", list(SLEEPERS))
def test_a_process_left_by_step_one_is_gone_before_step_two_runs_and_nothing_survives(
    tmp_path: Path, name: str
) -> None:
    if name != "a forked child" and _unprotected("forked survivor"):
        pytest.skip("a setsid'd grandchild outside bubblewrap is found only by a uid of its own (root)")
    folder = tmp_path / "my_json_text"
    shutil.copytree(STUBS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for file, attack in (("json_text_messages.py", SLEEPERS[name]), ("json_text_adapter.py", LOOK_FOR_THE_SLEEPER)):
        path = folder / file
        path.write_text(path.read_text(encoding="utf-8") + "\n\n# the attack\n" + attack, encoding="utf-8")
    started = time.monotonic()
    report = verify(folder, step=2, time_limit=LIMIT)
    assert time.monotonic() - started < BOUND
    text = str(report)
    assert "step one sleeper: gone" in text, text
    assert report.passed == 0
    assert sandbox_processes() == []


# A learner file that is not a file of the learner's own: verify reads it in the parent, with the teacher's
# rights, so it must be refused there (never followed, never waited on) and said as one line.
SPECIAL_FILES = {
    "a link to the parent's environment": ("json_text_adapter.py", "/proc/self/environ"),
    "a link to a solution": ("json_action_parser.py", str(SOLUTION_PARSER)),
    "a link to the parent's memory": ("json_text_messages.py", "/proc/self/mem"),
    "a link to the kernel's log (blocks)": ("json_text_adapter.py", "/proc/kmsg"),
    "a FIFO (blocks)": ("json_action_parser.py", ""),
}


@pytest.mark.parametrize("name", list(SPECIAL_FILES))
def test_a_learner_file_that_is_a_link_or_not_a_regular_file_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("CAL_FAKE_API_KEY", SECRET)
    file, target = SPECIAL_FILES[name]
    folder = tmp_path / "my_json_text"
    shutil.copytree(STUBS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / file).unlink()
    if target:
        (folder / file).symlink_to(target)
    else:
        os.mkfifo(folder / file)
    started = time.monotonic()
    report = verify(folder, time_limit=LIMIT)
    assert time.monotonic() - started < BOUND
    text = str(report) + report._repr_html_()
    assert SECRET not in text
    assert "Traceback" not in text
    assert report.passed == 0, text
    stem = file.removesuffix(".py")
    refused = [problem for problem in report.file_problems if problem.startswith(f"{file} was not read")]
    assert len(refused) == 1, report.file_problems
    assert ("symbolic link" if target else "not a regular file") in refused[0]
    assert "Error" not in refused[0]
    assert all(result.passed is None for result in report.results if result.check.file == stem)


def _attacked(base: Path, attack: str, file: str = "json_text_messages.py", name: str = "my_json_text") -> Path:
    folder = base / name
    shutil.copytree(STUBS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / file
    path.write_text(path.read_text(encoding="utf-8") + "\n\n# the attack\n" + attack, encoding="utf-8")
    return folder


# Parts of our own shape with a field of the wrong type, sent on the real channel while the file loads
# (the child knows a probe by its place: 0 to 3 are checks 1.1 to 1.4 when no seed shuffles them).
MALFORMED_PARTS = (
    "import sandbox_io as _io\n"
    "_io.send_part({'done': '0', 'result': {'error': {'mro': 5}}})\n"
    "_io.send_part({'done': '1', 'result': {'error': {'type': 1, 'module': 'm', 'mro': [], 'message': ''}}})\n"
    "_io.send_part({'done': '2', 'result': {'error': {'type': 'E', 'module': 'm', 'mro': [], 'message': '',"
    " 'place': [1, 2, 3]}}})\n"
    "_io.send_part({'done': '3', 'not_run': 'yes'})\n"
    "_io.send_part({'done': 'load:json_text_adapter', 'error': {'mro': 5}})\n"
    "_io.send_part({'done': 'load:json_action_parser', 'reference_imports': 7})\n"
)


def test_a_malformed_message_from_the_child_is_one_failed_line_never_a_traceback(tmp_path: Path) -> None:
    report = verify(_attacked(tmp_path, MALFORMED_PARTS), step=3, time_limit=LIMIT)
    text = str(report)
    outcomes = {result.check.id: result for result in report.results}
    for check in ("1.1", "1.2", "1.3", "1.4"):
        assert outcomes[check].passed is False
        assert outcomes[check].got == f"the checking process sent malformed data for {check}", text
    assert "json_text_adapter.py could not be loaded: the checking process sent malformed data" in text
    assert "json_action_parser.py could not be loaded: the checking process sent malformed data" in text
    assert report.passed == 0


# Progress only for the keys the parent sent, each once, and never past the step's own budget.
FAKE_STARTS = (
    "import sandbox_io as _io, time as _time\n"
    "for _i in range(10**6):\n"
    "    _io.send_part({'start': 'fake%d' % _i})\n"
    "    _time.sleep(0.4)\n"
)
REAL_KEYS_SLOWLY = (
    "import sandbox_io as _io, time as _time\n"
    "for _n in range(12):\n"
    "    _io.send_part({'start': str(_n)})\n"
    "    _time.sleep(0.4)\n"
    "    _io.send_part({'done': str(_n), 'not_run': True})\n"
    "    _time.sleep(0.4)\n"
    "_time.sleep(60)\n"
)


def test_unknown_keys_buy_no_time(tmp_path: Path) -> None:
    started = time.monotonic()
    report = verify(_attacked(tmp_path, FAKE_STARTS), step=1, time_limit=0.5)
    assert time.monotonic() - started < 8.0, str(report)
    assert "no answer within 0.5 s" in str(report)
    assert report.passed == 0


def test_a_step_has_a_deadline_that_its_own_keys_do_not_reset(tmp_path: Path) -> None:
    # step 1: 12 checks + 3 files at 0.5 s is a budget of 7.5 s; the child sends 24 events 0.4 s apart (9.6 s)
    started = time.monotonic()
    report = verify(_attacked(tmp_path, REAL_KEYS_SLOWLY), step=1, time_limit=0.5)
    assert time.monotonic() - started < 9.0, str(report)
    assert report.passed == 0


CONTROL = "\x1b[2J\x1b[31mEVIL\x07"
CONTROL_KEYS = (
    "import sandbox_io as _io, time as _time\n"
    f"_io.send_part({{'start': {CONTROL + 'A' * 5000!r}}})\n"
    f"_io.send_part({{'done': '0', 'result': {{'error': {{'type': {CONTROL!r}, 'module': {CONTROL!r},"
    f" 'mro': [{CONTROL!r}], 'message': {CONTROL * 500!r}, 'place': [{CONTROL!r}, 1]}}}}}})\n"
    "_time.sleep(60)\n"
)


def test_no_string_the_child_sends_reaches_the_report_raw(tmp_path: Path) -> None:
    report = verify(_attacked(tmp_path, CONTROL_KEYS, name="my\x1bjson\x07"), step=1, time_limit=LIMIT)
    text = str(report) + report._repr_html_()
    assert "\x1b" not in text and "\x07" not in text
    assert all(line.isprintable() for line in text.splitlines())
    assert max(len(line) for line in str(report).splitlines()) < 1000
    assert "A" * 500 not in text


COUNT_FORKS = (
    "import os as _os, time as _time\n"
    "try:\n    _big = len(bytearray(600 * 2**20))\nexcept MemoryError:\n    _big = 'refused'\n"
    "_forked = 0\n"
    "while _forked < 100:\n"
    "    try:\n"
    "        if _os.fork() == 0:\n"
    "            _time.sleep(30)\n"
    "            _os._exit(0)\n"
    "    except OSError:\n"
    "        break\n"
    "    _forked += 1\n"
    "raise RuntimeError('forked %d, 600 MB %s' % (_forked, _big))\n"
)


def test_a_run_has_at_most_16_processes_of_512_mib_each(tmp_path: Path) -> None:
    if not (sandbox.isolated() or os.geteuid() != 0):
        pytest.skip("as root without bubblewrap no process limit binds (said by protections())")
    text = str(verify(_attacked(tmp_path, COUNT_FORKS), step=1, time_limit=LIMIT))
    forked = int(text.split("RuntimeError: forked ")[1].split(",")[0])
    assert 0 < forked < 16, text
    assert "600 MB refused" in text
    assert sandbox_processes() == []


# Six children that each touch 300 MiB (under the 512 MiB each process may have) and wait: a cap on the run as
# a whole lets at most one of them live; per-process limits alone let all six.
MEMORY_BY_FORKS = (
    "import os as _os, select as _select, time as _time\n"
    "_r, _w = _os.pipe()\n"
    "_pids = []\n"
    "for _n in range(6):\n"
    "    _pid = _os.fork()\n"
    "    if _pid == 0:\n"
    "        _b = bytearray(300 * 2**20)\n"
    "        for _i in range(0, len(_b), 4096):\n"
    "            _b[_i] = 1\n"
    "        _os.write(_w, b'.')\n"
    "        _time.sleep(30)\n"
    "        _os._exit(0)\n"
    "    _pids.append(_pid)\n"
    "_os.close(_w)\n"
    "_held, _end = 0, _time.monotonic() + 8\n"
    "while _held < 6 and _select.select([_r], [], [], max(0, _end - _time.monotonic()))[0]:\n"
    "    _got = _os.read(_r, 6)\n"
    "    if not _got:\n"
    "        break\n"
    "    _held += len(_got)\n"
    "_time.sleep(1)\n"
    "# alive now, not how many ever held their 300 MiB: the OOM killer may take one after it wrote its dot\n"
    "_alive = sum(1 for _pid in _pids if _os.waitpid(_pid, _os.WNOHANG) == (0, 0))\n"
    "raise RuntimeError('alive %d of 6' % _alive)\n"
)


def _run_groups() -> list[Path]:
    """This process's run groups still there (other processes on the machine may be running verify too)."""
    return [path for path in Path("/sys/fs/cgroup").glob(f"**/cal-sandbox-{os.getpid()}-*") if path.is_dir()]


def test_memory_is_capped_for_the_run_as_a_whole_where_a_cgroup_can_be_made(tmp_path: Path) -> None:
    if not sandbox.sandbox_cgroup.available():
        pytest.skip("no cgroup of its own here (not root, or no memory hierarchy): said by protections()")
    report = verify(_attacked(tmp_path, MEMORY_BY_FORKS), step=1, time_limit=15.0)
    text = str(report)
    alive = int(text.split("RuntimeError: alive ")[1].split(" ")[0])
    assert alive <= 1, text  # 300 MiB each, 512 MiB for the run: two never live at once
    assert "a cgroup of its own" in text.splitlines()[-1]
    assert _run_groups() == []
    assert sandbox_processes() == []


def test_the_reports_last_line_says_how_this_run_was_capped_not_what_the_machine_offers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No group made for this run (a full hierarchy, a v2-only machine): the per-process limits are what applied.
    monkeypatch.setattr(sandbox.sandbox_cgroup, "make", lambda memory, processes: None)
    last = str(verify(ROOT / "solutions" / "my_json_text", step=1)).splitlines()[-1]
    assert "not for the run as a whole" in last and "cgroup of its own" not in last, last
    monkeypatch.setattr(sandbox.sandbox_cgroup, "unified_only", lambda: True)
    last = str(verify(ROOT / "solutions" / "my_json_text", step=1)).splitlines()[-1]
    assert "cgroup v2 only" in last, last


def _replayed_results() -> tuple[dict[str, object], list[object]]:
    """The reference's results for the public parse probes, by check id and by place in verify's order."""
    from codeagent_lite import json_action_parser
    from codeagent_lite.workbook.contract import checks_up_to
    from codeagent_lite.workbook.verify_probe import run_probe

    by_id: dict[str, object] = {}
    by_place: list[object] = []
    for check in checks_up_to(4):
        result = None
        if check.step >= 3:
            result = run_probe(json_action_parser, check.probe()[0])
            result.update(printed="", reference_imports=[])
            by_id[check.id] = result
        by_place.append(result)
    return by_id, by_place


def test_a_replay_of_recorded_results_does_not_pass_the_drawn_checks(tmp_path: Path) -> None:
    by_id, by_place = _replayed_results()
    # the parser, when called on a probe, finds that probe's place in the probe runner's frame and sends the
    # recorded result for it before the real one (which then comes too late): a replay, by check id or by place
    replay = (
        "import sandbox_io as _io, sys as _sys\n"
        f"_BY_ID = {by_id!r}\n_BY_PLACE = {by_place!r}\n"
        "def parse_json_action(raw_text):\n"
        "    _f = _sys._getframe()\n"
        "    while _f is not None and 'item' not in _f.f_locals:\n"
        "        _f = _f.f_back\n"
        "    _p = _f.f_locals['item']\n"
        "    _n = int(_p['id'])\n"
        "    _r = _BY_ID.get(_p['id']) or (_BY_PLACE[_n] if _n < len(_BY_PLACE) else None)\n"
        "    if _r is not None:\n"
        "        _io.send_part({'done': _p['id'], 'result': _r})\n"
        "    raise NotImplementedError\n"
    )
    folder = _attacked(tmp_path, replay.replace("null", "None"), file="json_action_parser.py")
    public = verify(folder, time_limit=LIMIT)
    assert sum(1 for result in public.results if result.passed and result.check.step >= 3) >= 30, str(public)
    seeded = verify(folder, seed=20261201, time_limit=LIMIT)
    passed = sorted(result.check.id for result in seeded.results if result.passed)
    # by check id the replay passed 34 of these 37; by place, only the rejections alike in layer and phrase pass
    assert len(passed) <= 12, (passed, str(seeded))


# Step 1's code looks for the later steps' probes wherever the child keeps data: its payload file and every
# frame of the probe runner. It finds the parser's inputs only if they reached the child before step 1's fence.
LOOKS_AHEAD = (
    "import sys as _sys\n"
    "def build_provider_messages(history):\n"
    "    _seen = open('payload.json').read()\n"
    "    _f = _sys._getframe()\n"
    "    while _f is not None:\n"
    "        _seen += repr(_f.f_locals)\n"
    "        _f = _f.f_back\n"
    "    raise RuntimeError('parser probes seen: %s' % ('json_action_parser' in _seen))\n"
)


# The adapter's file replaces the probe runner: for an adapter probe it makes up the result a correct adapter
# would give (from the probe's values where it has them, else from the public cases) and claims every fact the
# judges read about the stand-ins' calls, without calling anything.
FORGED_STAND_INS = """
import verify_probe as _vp
from codeagent_lite.model_adapter import (
    InvalidModelOutputError as _Invalid, ModelProviderError as _ProviderFailed, ModelResponse as _Response,
    TokenUsage as _Usage, ValidationLayer as _Layer,
)
from codeagent_lite.kernel_types import ToolCall as _ToolCall
from codeagent_lite.workbook.wire import encode as _encode, shown as _shown

_real = _vp.run_probe
_PUBLIC = {
    "canned_action": _encode(_ToolCall("call_1", "read_file", {"path": "README.md"})),
    "usage": [17, 26], "reply": "", "failure": None, "failure_message": "HTTP 503: server overloaded",
    "canned_rejection": None,
}


def _forged(module, probe, package_dir="", *args, **kwargs):
    if probe.get("kind") != "adapter":
        return _real(module, probe, package_dir, *args, **kwargs)
    known = dict(_PUBLIC, **probe.get("stand_ins", {}), **{k: v for k, v in probe.items() if k in _PUBLIC})
    history = _vp.kernel_value(probe["history"])
    tools = _vp.kernel_value(probe["tools"])
    claims = {
        "built": [_encode(history)], "parsed": [known["reply"]], "cause_is_original": True,
        "calls": [{"messages_same": True, "messages_shown": "", "tools": _encode(tools), "tools_shown": "",
                   "max_output_tokens": probe["max_output_tokens"]}],
    }
    usage = _Usage(*known["usage"])
    try:
        if known["failure"] == "provider_error":
            raise _ProviderFailed("failed") from module.ProviderError(known["failure_message"])
        if known["failure"] == "key_error":
            raise KeyError("a bug inside the provider")
        if known.get("canned_rejection"):
            rejection = known["canned_rejection"]
            raise _Invalid(rejection["message"], layer=_Layer(rejection["layer"]), usage=usage)
    except BaseException as error:
        return dict(claims, error=_vp.describe_error(error))
    response = _Response(_vp.kernel_value(known["canned_action"]), usage)
    return dict(claims, value=_encode(response), shown=_shown(response))


_vp.run_probe = _forged
"""


def test_facts_the_child_claims_about_the_stand_ins_calls_pass_no_check(tmp_path: Path) -> None:
    folder = _attacked(tmp_path, FORGED_STAND_INS, file="json_text_adapter.py")
    for seed in (None, 20261202):
        report = verify(folder, step=2, time_limit=LIMIT, seed=seed)
        passed = [result.check.id for result in report.results if result.passed]
        assert passed == [], (seed, str(report))


HANGS_EVERYWHERE = (
    "def _forever(*args, **kwargs):\n"
    "    while True:\n"
    "        pass\n"
    "build_provider_messages = parse_json_action = _forever\n"
    "class JsonTextModelAdapter:\n"
    "    def __init__(self, provider):\n"
    "        pass\n"
    "    complete = _forever\n"
)


def test_a_hang_costs_one_time_limit_per_step_and_its_reason_is_said_once_per_step(tmp_path: Path) -> None:
    folder = hostile_folder(tmp_path, "hangs", HANGS_EVERYWHERE)
    started = time.monotonic()
    report = verify(folder, time_limit=LIMIT)
    took = time.monotonic() - started
    # four steps, one time limit each (each step's first check hangs), and a fresh interpreter per step
    assert took < 4 * LIMIT + 10, took
    text = str(report)
    for step, first in ((1, "1.1"), (2, "2.1"), (3, "3.1"), (4, "4.1")):
        results = [result for result in report.results if result.check.step == step]
        assert [result.passed for result in results] == [False] + [None] * (len(results) - 1), step
        assert f"no answer within {LIMIT:g} s" in results[0].got
        assert text.count(f"this step stopped at {first}:") == 1, text
        others = ", ".join(result.check.id for result in results[2:])
        assert f"the same for {others}" in text
    assert sandbox_processes() == []


def test_one_root_cause_is_said_once_naming_the_checks_in_the_notebooks_table_too(tmp_path: Path) -> None:
    one_mistake = "def build_provider_messages(history):\n    raise RuntimeError('one mistake')\n"
    report = verify(_attacked(tmp_path, one_mistake), step=1, time_limit=LIMIT)
    assert [result.passed for result in report.results] == [False] * 12
    others = ", ".join(f"1.{n}" for n in range(2, 13))
    for shown in (str(report), report._repr_html_()):
        assert shown.count("one mistake") == 1, shown
        assert f"the same for {others}" in shown


# A parser that does not do step 4's work: the solution's, but its strict JSON layer replaced by json.loads and
# a recogniser of the step's refused texts by their look (a word, a key said twice, many brackets, long digits).
RECOGNISES_SHAPES = """
import json as _json, re as _re


def _load_strict_json(raw_text):
    looks = (
        any(word in raw_text for word in ("NaN", "Infinity", "1e999"))
        or _re.search(r"[0-9]{4300}", raw_text) is not None
        or raw_text.count('"tool_name"') > 1
        or raw_text.count('"path"') > 1
        or raw_text.count("[") > 1000
    )
    layer = ValidationLayer.JSON_SYNTAX
    if looks:
        raise InvalidModelOutputError("model output must be valid JSON: it looks wrong", layer=layer)
    try:
        return _json.loads(raw_text)
    except (ValueError, RecursionError) as error:
        raise InvalidModelOutputError(f"model output must be valid JSON: {error}", layer=layer) from None
"""


def test_a_parser_that_recognises_the_refused_texts_by_their_look_fails_the_graded_rejection_checks(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "my_json_text"
    shutil.copytree(SOLUTION_PARSER.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    parser = folder / "json_action_parser.py"
    parser.write_text(parser.read_text(encoding="utf-8") + RECOGNISES_SHAPES, encoding="utf-8")
    recognised = {f"4.{n}" for n in range(1, 9)}
    public = verify(folder, time_limit=LIMIT)
    assert public.ok, str(public)  # on the public texts the look is enough
    for seed in (7, 20261203):
        graded = verify(folder, time_limit=LIMIT, seed=seed)
        failed = {result.check.id for result in graded.failed}
        assert failed == recognised, (seed, str(graded))
        assert "on the valid look-alike" in str(graded)


WRONG_CODE = """
_parse_rightly = parse_json_action


def parse_json_action(raw_text):
    try:
        return _parse_rightly(raw_text)
    except InvalidModelOutputError as error:
        raise InvalidModelOutputError(str(error), layer=error.layer, code="made_up") from None
"""


def test_a_rejection_with_the_right_layer_and_phrase_but_a_code_of_its_own_fails(tmp_path: Path) -> None:
    folder = tmp_path / "my_json_text"
    shutil.copytree(SOLUTION_PARSER.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    parser = folder / "json_action_parser.py"
    parser.write_text(parser.read_text(encoding="utf-8") + WRONG_CODE, encoding="utf-8")
    report = verify(folder, step=4, time_limit=LIMIT, seed=11)
    rejections = {result.check.id for result in report.results if result.check.step == 4}
    assert {result.check.id for result in report.failed} >= rejections
    assert "the right layer, but the code 'made_up'" in str(report)


# Step 1's code claims to start every place the session might hold, and asks the provider stand-in for each:
# a later step's adapter check would answer with its values (a reply, a usage) if its place counted already.
CLAIMS_A_LATER_STEP = (
    "import sandbox_io as _io\n"
    "def build_provider_messages(history):\n"
    "    _got = []\n"
    "    for _place in range(80):\n"
    "        _io.send_part({'start': str(_place)})\n"
    "        _io.send_part({'call': 'complete', 'messages': [], 'tools': [], 'max_output_tokens': 1})\n"
    "        _got.append(_io.receive())\n"
    "    _given = any(isinstance(_a, dict) and 'reply' in _a for _a in _got)\n"
    "    raise RuntimeError('stand-in values given to step 1: %s' % _given)\n"
)


@pytest.mark.parametrize(
    ("attack", "claim"),
    [
        pytest.param(LOOKS_AHEAD, "parser probes seen", id="a step's probes reach the child after the last fence"),
        pytest.param(
            CLAIMS_A_LATER_STEP, "stand-in values given to step 1", id="a later step's keys count once handed out"
        ),
    ],
)
def test_step_one_code_learns_nothing_of_a_later_step(tmp_path: Path, attack: str, claim: str) -> None:
    """The attack raises with what it found (True or False) in its message: only False may reach the report."""
    text = str(verify(_attacked(tmp_path, attack), time_limit=LIMIT))
    assert f"{claim}: False" in text, text
    assert f"{claim}: True" not in text


# --------------------------------------------------------------------------- second bug hunt on the judge

SPOILS_LONG_STRINGS = """
_parse_whole = parse_json_action


def parse_json_action(raw_text):
    action = _parse_whole(raw_text)
    if isinstance(action, ToolCall):  # the tail of a long argument is lost: the codec's 4,000 characters are kept
        cut = {key: value[:4000] + "~" if isinstance(value, str) and len(value) > 4000 else value
               for key, value in action.arguments.items()}
        return ToolCall(action.call_id, action.tool_name, cut)
    return action
"""
INTEGERS_AS_FLOATS = """
_parse_whole = parse_json_action


def parse_json_action(raw_text):
    action = _parse_whole(raw_text)
    if isinstance(action, ToolCall):  # 40 becomes 40.0: equal by ==, not the same value
        floats = {key: float(value) if type(value) is int else value for key, value in action.arguments.items()}
        return ToolCall(action.call_id, action.tool_name, floats)
    return action
"""


@pytest.mark.parametrize(
    ("spoiled", "failing"),
    [(SPOILS_LONG_STRINGS, {"4.7", "4.8"}), (INTEGERS_AS_FLOATS, {"3.3"})],
    ids=["tail", "float"],
)
def test_a_parser_that_spoils_valid_values_fails_the_checks_that_keep_them(
    tmp_path: Path, spoiled: str, failing: set[str]
) -> None:
    """Both sides of the comparison were cut at the codec's 4,000 characters, and compared by ==."""
    report = verify(_solution_with(tmp_path, "json_action_parser", spoiled), seed=1, time_limit=10)
    assert failing <= {result.check.id for result in report.results if result.passed is False}, str(report)


def test_a_helper_imported_under_another_name_is_still_the_one_the_adapter_lends(tmp_path: Path) -> None:
    """The stand-ins replaced the helpers by name only: a correct adapter calling ``_parse_reply`` failed step 2."""
    folder = _solution_with(tmp_path, "json_text_adapter", "")
    adapter = folder / "json_text_adapter.py"
    source = adapter.read_text(encoding="utf-8")
    source = source.replace("import parse_json_action\n", "import parse_json_action as _parse_reply\n")
    adapter.write_text(source.replace("= parse_json_action(", "= _parse_reply("), encoding="utf-8")
    assert "_parse_reply(raw_response.text)" in adapter.read_text(encoding="utf-8")
    report = verify(folder, step=2, time_limit=10)
    assert report.passed == len(report.results) == 22, str(report)


@pytest.mark.parametrize(
    ("file", "stop", "passing_steps"),
    [
        ("json_text_adapter", "import time as _t\n_t.sleep(60)\n", {1, 3, 4}),
        ("json_action_parser", "import time as _t\n_t.sleep(60)\n", {1}),
        (
            "json_text_messages",
            "import ctypes as _c\n\ndef build_provider_messages(history):\n    _c.string_at(0)\n",
            {2, 3, 4},
        ),
        ("json_text_messages", "import sys as _sys\n_sys.setrecursionlimit(100_000)\n", {1, 2, 3, 4}),
    ],
    ids=["adapter-hangs-loading", "parser-hangs-loading", "messages-crash-every-call", "messages-sets-a-limit"],
)
def test_one_files_hang_crash_or_setting_costs_no_other_step(
    tmp_path: Path, file: str, stop: str, passing_steps: set[int]
) -> None:
    report = verify(_solution_with(tmp_path, file, "\n" + stop), time_limit=1)
    passed = {step for step in (1, 2, 3, 4) if all(r.passed for r in report.results if r.check.step == step)}
    assert passed == passing_steps, str(report)
    if file == "json_action_parser":
        assert "! json_action_parser.py could not be loaded: no answer within 1 s" in str(report), str(report)


def test_a_look_alike_that_raises_is_said_as_the_error_not_as_data(tmp_path: Path) -> None:
    raises = (
        '\n_whole = parse_json_action\n\n\ndef parse_json_action(raw_text):\n    if "notes_" in raw_text:\n'
        '        raise KeyError("note")\n    return _whole(raw_text)\n'
    )
    text = str(verify(_solution_with(tmp_path, "json_action_parser", raises), step=4, seed=7, time_limit=10))
    assert "on the valid look-alike" in text and "it raised KeyError: 'note'" in text, text
    assert "'$error'" not in text, text


# --------------------------------------------------------------------------- third bug hunt

PATCHES_JSON_DUMPS = """
_plain_dumps = json.dumps


def _compact_dumps(value, **_ignored):  # every json.dumps in the process writes the chapter's encoding
    return _plain_dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


json.dumps = _compact_dumps
"""


def test_a_learner_replacing_json_dumps_does_not_break_the_channel(tmp_path: Path) -> None:
    """The channel's writer looked ``json.dumps`` up at each message: the learner's own (non-ASCII, whatever it was
    asked) made every message garbage, and a correct file was reported as one that could not be loaded."""
    report = verify(_solution_with(tmp_path, "json_text_messages", PATCHES_JSON_DUMPS), step=1, time_limit=10)
    assert report.ok and report.passed == 12, str(report)


def test_an_import_error_names_no_path_of_this_machine(tmp_path: Path) -> None:
    """An ImportError names the file it looked in: the interpreter's under the teacher's home (a pyenv), the
    sandbox's folder (random without bubblewrap). A report, a notebook's saved output, reads the same anywhere."""
    folder = _solution_with(tmp_path, "json_text_messages", "\nfrom json import no_such_name\n")
    with (folder / "json_text_adapter.py").open("a", encoding="utf-8") as adapter:
        adapter.write("\nfrom .json_action_parser import no_such_helper\n")
    text = str(verify(folder, step=2, time_limit=10))
    assert text.count("cannot import name") == 2 and "json/__init__.py" in text, text
    for machine_path in (os.path.join(sys.base_prefix, ""), "/sandbox/", "cal-sandbox-"):
        assert machine_path not in text, text
