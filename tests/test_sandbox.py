"""The sandbox on its own: what the child can reach, how its channel is read, and that nothing survives it.

Each test is an attack a hostile learner file could make, written as a small child program.
On Linux the sandbox must be bubblewrap's: under ``CAL_REQUIRE_SANDBOX=1`` (CI) its absence
is a failure, not a quiet fallback.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest
from sandbox_watch import sandbox_processes

from codeagent_lite.workbook import sandbox, sandbox_cgroup

SECRET = "sk-test-sandbox-0123456789"
LIMITS = sandbox.Limits(seconds=5.0)


def run(program: str, limits: sandbox.Limits = LIMITS) -> sandbox.ChildOutcome:
    return sandbox.run_in_sandbox(program, payload={"n": 1}, files={}, limits=limits)


def test_linux_runs_children_in_bubblewrap_where_ci_requires_it() -> None:
    shown = sandbox.protections()
    assert shown and all(isinstance(phrase, str) and phrase for phrase in shown)
    if os.environ.get("CAL_REQUIRE_SANDBOX") == "1" and sys.platform.startswith("linux"):
        assert any("bubblewrap:" in phrase for phrase in shown), shown


def test_the_childs_package_holds_the_kernel_types_and_no_reference_module() -> None:
    closure = sandbox.kernel_closure()
    assert {"kernel_types", "model_adapter", "display"} <= set(closure)  # display: wire, copied beside, imports it
    assert not set(closure) & sandbox.REFERENCE_MODULES
    outcome = run(
        "import os, sandbox_io\n"
        "sandbox_io.send(sorted(name for name in os.listdir('codeagent_lite') if name.endswith('.py')))\n"
    )
    assert outcome.status == "ok"
    assert {name.removesuffix(".py") for name in outcome.data} == {"__init__", *closure}  # type: ignore[union-attr]


def test_the_child_sees_no_secret_of_the_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAL_FAKE_API_KEY", SECRET)
    outcome = run(
        "import os, sandbox_io\n"
        "seen = repr(dict(os.environ))\n"
        "for pid in os.listdir('/proc'):\n"
        "    try:\n"
        "        seen += open(f'/proc/{pid}/environ', 'rb').read().decode('latin-1')\n"
        "    except (OSError, ValueError):\n"
        "        pass\n"
        "sandbox_io.send(seen)\n"
    )
    assert outcome.status == "ok"
    assert SECRET not in str(outcome.data)


def test_a_fork_bomb_meets_the_process_limit_and_nothing_it_forked_survives() -> None:
    program = (
        "import os, time, sandbox_io\n"
        "count = 0\n"
        "try:\n"
        "    while count < 500:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(120)\n"
        "            os._exit(0)\n"
        "        count += 1\n"
        "except OSError:\n"
        "    pass\n"
        "sandbox_io.send(count)\n"
    )
    outcome = run(program)
    assert outcome.status == "ok"
    assert isinstance(outcome.data, int) and outcome.data < LIMITS.processes
    assert sandbox_processes() == []


SETSID_SLEEPER = (
    "def setsid_sleeper():\n"
    "    # a grandchild in a session of its own whose parent has gone: the escape a double fork makes\n"
    "    reader, writer = os.pipe()\n"
    "    first = os.fork()\n"
    "    if first == 0:\n"
    "        os.setsid()\n"
    "        grandchild = os.fork()\n"
    "        if grandchild == 0:\n"
    "            time.sleep(120)\n"
    "            os._exit(0)\n"
    "        os.write(writer, str(grandchild).encode())\n"
    "        os._exit(0)\n"
    "    os.waitpid(first, 0)\n"
    "    return int(os.read(reader, 20))\n"
)
"""A child program's helper: the pid of a sleeping grandchild that called ``setsid`` and lost its parent."""


def test_a_double_forked_setsid_sleeper_does_not_survive_the_run() -> None:
    if not sandbox.isolated() and os.environ.get("CAL_REQUIRE_SANDBOX") != "1":
        pytest.skip("a setsid'd grandchild escapes a plain session; bubblewrap's pid namespace is needed")
    program = "import os, time, sandbox_io\n" + SETSID_SLEEPER + "setsid_sleeper()\nsandbox_io.send('forked')\n"
    assert run(program).status == "ok"
    assert sandbox_processes() == []


FENCED = (
    "import os, sys, time, sandbox_io\n"
    + SETSID_SLEEPER
    + (
        "def state(pid):\n"
        "    try:\n"
        "        return open(f'/proc/{pid}/stat').read().rpartition(')')[2].split()[0]\n"
        "    except OSError:\n"
        "        return 'gone'\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    time.sleep(120)\n"
        "    os._exit(0)\n"
        "pids = [child, setsid_sleeper()] if SETSID else [child]\n"
        "time.sleep(0.2)\n"
        "before = [state(pid) for pid in pids]\n"
        "sandbox_io.send_part('the next step, please')\n"
        "sandbox_io.receive()\n"
        "sandbox_io.reap()\n"
        "sandbox_io.send({'before': before, 'after': [state(pid) for pid in pids]})\n"
    )
)


def run_fenced(program: str) -> sandbox.ChildOutcome:
    """``program`` in a run whose every request is answered after a fence (as verify hands out a step)."""
    return sandbox.run_in_sandbox(
        program,
        payload=None,
        files={},
        limits=LIMITS,
        on_part=lambda part: sandbox.Answer("go", fence=True),
        answers=True,
    )


def test_a_fence_kills_every_other_process_of_the_run_and_the_program_goes_on() -> None:
    if not sandbox.isolated() and os.environ.get("CAL_REQUIRE_SANDBOX") != "1":
        pytest.skip("a setsid'd grandchild outside bubblewrap is found only by a uid of its own (root)")
    outcome = run_fenced("SETSID = True\n" + FENCED)
    assert outcome.status == "ok", outcome
    assert isinstance(outcome.data, dict) and outcome.data["before"] == ["S", "S"], outcome.data
    # dead: reaped by the program, or (the setsid'd grandchild, an orphan of the pid namespace's init) a zombie
    # for the moment init takes to reap it; neither runs anything
    assert outcome.data["after"][0] == "gone" and outcome.data["after"][1] in ("gone", "Z"), outcome.data
    assert sandbox_processes() == []


def test_a_flood_of_requests_whose_answers_are_never_read_cannot_block_the_parent() -> None:
    program = "import sandbox_io\nfor _ in range(200_000):\n    sandbox_io.send_part('ask')\nsandbox_io.send('done')\n"
    threads = threading.active_count()
    started = time.monotonic()
    outcome = sandbox.run_in_sandbox(
        program, payload=None, files={}, limits=LIMITS, on_part=lambda part: sandbox.Answer("x" * 1000), answers=True
    )
    assert time.monotonic() - started < 15
    assert outcome.status == "timeout", outcome
    assert "stopped reading its requests" in outcome.detail
    assert sandbox_processes() == []
    while threading.active_count() > threads and time.monotonic() - started < 20:
        time.sleep(0.05)  # the blocked writer's pipe broke with the run: its thread ends
    assert threading.active_count() <= threads


def test_a_run_without_answers_refuses_an_answer() -> None:
    outcome = sandbox.run_in_sandbox(
        "import sandbox_io\nsandbox_io.send_part('ask')\nsandbox_io.send('done')\n",
        payload=None,
        files={},
        limits=LIMITS,
        on_part=lambda part: sandbox.Answer("go"),
    )
    assert outcome.status == "garbage" and "answers nothing" in outcome.detail


def test_a_memory_bomb_is_a_memory_error_in_the_child() -> None:
    program = (
        "import sandbox_io\n"
        "try:\n"
        "    hoard = bytearray(8 * 2**30)\n"
        "    sandbox_io.send('allocated')\n"
        "except MemoryError:\n"
        "    sandbox_io.send('MemoryError')\n"
    )
    assert run(program).data == "MemoryError"


def test_there_is_no_network() -> None:
    program = (
        "import socket, sandbox_io\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 80), timeout=2)\n"
        "    sandbox_io.send('connected')\n"
        "except OSError as error:\n"
        "    sandbox_io.send(type(error).__name__)\n"
    )
    outcome = run(program)
    if any("no network" in phrase for phrase in sandbox.protections()):
        assert outcome.data != "connected"


def test_the_working_tree_and_the_reference_are_not_readable() -> None:
    reference = os.path.abspath(sandbox.__file__ + "/../../json_action_parser.py")
    outcome = run(
        "import sandbox_io\n"
        f"try:\n    sandbox_io.send(open({reference!r}).read()[:40])\n"
        "except OSError as error:\n    sandbox_io.send(type(error).__name__)\n"
    )
    if any("bubblewrap:" in phrase for phrase in sandbox.protections()):
        assert outcome.data in ("FileNotFoundError", "PermissionError")


@pytest.mark.parametrize(
    ("written", "status", "words"),
    [
        (b'{"kind": "final", "data": ' + b"[" * 200_000 + b"]" * 200_000 + b"}\n", "garbage", "nested more than"),
        (b"\xff\xfe garbage \x00\n", "garbage", "not a message"),
        (b"not json at all\n", "garbage", "not JSON"),
        (b'{"kind": "verdict", "data": "all pass"}\n', "garbage", "unknown shape"),
        (b'{"kind": "final", "da', "timeout", "never finished"),
        (b'{"kind": "final", "data": "' + b'\\"' * 400_000 + b"\n", "garbage", "not JSON"),
    ],
    ids=["200000 nested brackets", "bytes", "not JSON", "a forged kind", "half a message", "an unclosed string"],
)
def test_a_broken_message_is_one_clear_line(written: bytes, status: str, words: str) -> None:
    program = f"import os, sys, time\nos.write(int(sys.argv[1]), {written!r})\ntime.sleep(60)\n"
    started = time.monotonic()
    outcome = run(program, sandbox.Limits(seconds=2.0))
    assert time.monotonic() - started < 10
    assert outcome.status == status
    assert words in outcome.detail
    assert outcome.detail.isprintable()


def test_a_600_megabyte_message_does_not_grow_the_parent() -> None:
    program = (
        "import os, sys\nchunk = b'[' + b'1,' * 500_000\nfor _ in range(600):\n    os.write(int(sys.argv[1]), chunk)\n"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome = run(program)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert outcome.status == "too_big"
    assert grown_kib < 100 * 1024


@pytest.fixture
def without_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback of macOS, Windows and a Linux without bwrap: a plain subprocess."""
    monkeypatch.setattr(sandbox, "isolated", lambda: False)


@pytest.mark.usefixtures("without_bubblewrap")
def test_without_bubblewrap_the_environment_is_still_cleared_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAL_FAKE_API_KEY", SECRET)
    outcome = run("import os, sandbox_io\nsandbox_io.send(repr(dict(os.environ)))\n")
    assert outcome.status == "ok"
    assert SECRET not in str(outcome.data)
    assert any("no bubblewrap" in phrase for phrase in sandbox.protections())


@pytest.mark.usefixtures("without_bubblewrap")
def test_without_bubblewrap_a_forked_sleeper_is_still_killed() -> None:
    program = (
        "import os, time, sandbox_io\n"
        "if os.fork() == 0:\n"
        "    time.sleep(120)\n"
        "    os._exit(0)\n"
        "sandbox_io.send('forked')\n"
    )
    assert run(program).status == "ok"
    assert sandbox_processes() == []


@pytest.mark.usefixtures("without_bubblewrap")
def test_without_bubblewrap_a_fence_still_kills_a_forked_child() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("fences list the run's processes in /proc")
    outcome = run_fenced("SETSID = False\n" + FENCED)
    assert outcome.status == "ok", outcome
    assert outcome.data == {"before": ["S"], "after": ["gone"]}
    assert sandbox_processes() == []


@pytest.mark.usefixtures("without_bubblewrap")
def test_without_bubblewrap_verify_says_once_what_protects_the_learners_code() -> None:
    from codeagent_lite.workbook import verify as verify_module

    verify_module._said_protections.clear()
    solution = os.path.join(os.path.dirname(__file__), "..", "solutions", "my_json_text")
    first = verify_module.verify(solution, step=1)
    second = verify_module.verify(solution, step=1)
    assert first.passed == len(first.results)
    assert any("without bubblewrap" in note for note in first.notes)
    assert not any("without bubblewrap" in note for note in second.notes)


def test_verifys_probe_program_loads_no_reference_module_in_the_child() -> None:
    """The child of verify imports the Kernel types and the probe side only, never the chapter's reference."""
    from pathlib import Path

    from codeagent_lite.workbook.verify_child import learner_files

    solution = Path(__file__).resolve().parent.parent / "solutions" / "my_json_text"
    files = learner_files(solution, "my_json_text")
    program = (
        "import sys, verify_probe, sandbox_io\n"
        "import my_json_text.json_text_adapter\n"
        "tops = ('codeagent_lite', 'solutions')\n"
        "sandbox_io.send(sorted(name for name in sys.modules if name.split('.')[0] in tops))\n"
    )
    outcome = sandbox.run_in_sandbox(program, payload=None, files=files)
    assert outcome.status == "ok", outcome
    wanted = {"codeagent_lite", *(f"codeagent_lite.{name}" for name in sandbox.kernel_closure())}
    wanted |= {"codeagent_lite.workbook", "codeagent_lite.workbook.wire"}  # the channel's codec
    assert set(outcome.data) == wanted  # type: ignore[call-overload]


def test_writing_200_megabytes_fails_cleanly_and_the_runs_own_files_are_read_only() -> None:
    if not sandbox.isolated():
        pytest.skip("the disk cap is bubblewrap's tmpfs, which this machine lacks")
    program = (
        "import errno, os, sandbox_io\n"
        "def fill(place):\n"
        "    written = 0\n"
        "    try:\n"
        "        for n in range(200):\n"
        "            with open(os.path.join(place, 'junk%d' % n), 'wb') as out:\n"
        "                out.write(b'x' * 2**20)\n"
        "            written += 1\n"
        "    except OSError as error:\n"
        "        return [written, errno.errorcode.get(error.errno, '?')]\n"
        "    return [written, 'all']\n"
        "try:\n"
        "    open('sandbox_io.py', 'a').write('# changed')\n"
        "    ours = 'changed'\n"
        "except OSError as error:\n"
        "    ours = errno.errorcode.get(error.errno, '?')\n"
        "sandbox_io.send({'here': fill('.'), 'tmp': fill('/tmp'), 'ours': ours})\n"
    )
    outcome = run(program, sandbox.Limits(seconds=30.0))
    assert outcome.status == "ok", outcome.detail
    assert isinstance(outcome.data, dict)
    for place in ("here", "tmp"):
        written, why = outcome.data[place]
        assert written < 100 and why == "ENOSPC", outcome.data
    assert outcome.data["ours"] in ("EROFS", "EACCES"), outcome.data
    assert any("64 MiB" in phrase for phrase in sandbox.protections())
    memory = "a cgroup of its own" if sandbox_cgroup.available() else "no memory cgroup"
    assert any(memory in phrase for phrase in sandbox.protections())


def test_a_conversation_never_takes_a_late_unasked_part_for_the_next_answer() -> None:
    program = (
        "import time, sandbox_io\n"
        "while (request := sandbox_io.receive()) is not None:\n"
        "    sandbox_io.send_part(request)\n"
        "    time.sleep(0.05)\n"
        "    sandbox_io.send_part('nobody asked for this')\n"
    )
    with sandbox.SandboxSession(program, payload=None, files={}, limits=LIMITS) as child:
        answers = []
        for number in range(4):
            answers.append(child.ask(number))
            time.sleep(0.1 if number % 2 else 0.0)  # the extra part arrives before the next request, or after it
    assert answers == [0, 1, 2, 3]
    assert sandbox_processes() == []


def test_the_cgroups_of_a_killed_verify_are_removed_by_the_next_run() -> None:
    if not sandbox_cgroup.available():
        pytest.skip("no cgroup can be made here (root on a cgroup v1 memory and pids hierarchy is needed)")
    program = (
        "import sys, time\n"
        "from codeagent_lite.workbook import sandbox_cgroup\n"
        "group = sandbox_cgroup.make(2**28, 8)\n"
        "print(*group.folders, sep='\\n', flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True, env=env)
    assert killed.stdout is not None
    left = [Path(killed.stdout.readline().strip()) for _ in range(2)]
    killed.kill()  # kill -9, as a Jupyter kernel's restart does: no finally runs
    killed.wait()
    killed.stdout.close()
    assert all(folder.is_dir() for folder in left), left
    group = sandbox_cgroup.make(2**28, 8)
    assert group is not None
    group.remove()
    assert not any(folder.exists() for folder in left), left


def _without_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on macOS, or a Linux where user namespaces are blocked, not root: no bubblewrap, no uid, no cgroup."""
    monkeypatch.setattr(sandbox, "isolated", lambda: False)
    monkeypatch.setattr(sandbox, "_drops_uid", lambda: False)
    monkeypatch.setattr(sandbox_cgroup, "make", lambda memory_bytes, processes: None)


def test_without_bubblewrap_or_a_uid_a_double_forked_setsid_sleeper_dies_with_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """macOS, or a Linux where user namespaces are blocked, not root: no pid namespace, no uid of the run's own."""
    if not sys.platform.startswith("linux"):
        pytest.skip("no child subreaper here: protections() says a process that calls setsid can escape")
    _without_isolation(monkeypatch)
    program = "import os, time, sandbox_io\n" + SETSID_SLEEPER + "sandbox_io.send(setsid_sleeper())\n"
    started = time.monotonic()
    outcome = run(program)
    assert outcome.status == "ok", outcome
    assert time.monotonic() - started < 4
    assert any("re-parented to this process" in phrase for phrase in sandbox.protections())
    assert isinstance(outcome.data, int)
    deadline = time.monotonic() + 2
    while _running(outcome.data) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(outcome.data)


def test_without_bubblewrap_or_a_uid_a_fence_kills_a_setsid_grandchild(monkeypatch: pytest.MonkeyPatch) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("fences list the run's processes in /proc")
    _without_isolation(monkeypatch)
    outcome = run_fenced("SETSID = True\n" + FENCED)
    assert outcome.status == "ok", outcome
    assert isinstance(outcome.data, dict) and outcome.data["before"] == ["S", "S"], outcome.data
    # the grandchild is this process's (adopted) child: a zombie here until the run's end reaps it
    assert outcome.data["after"][0] == "gone" and outcome.data["after"][1] in ("gone", "Z"), outcome.data


def test_where_no_subreaper_exists_verify_says_a_setsid_process_can_escape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "isolated", lambda: False)
    monkeypatch.setattr(sandbox, "_subreaper", lambda: False)
    assert any("calls setsid can outlive it" in phrase for phrase in sandbox.protections())


def _running(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize(
    "written",
    [
        b"not json\n",
        b"\xff garbage\n",
        b'{"kind": "verdict", "data": 1}\n',
        b'{"data": ' + b"[" * 100 + b"]" * 100 + b"}\n",
    ],
    ids=["not JSON", "bytes", "a forged kind", "too deep"],
)
def test_a_broken_message_is_said_in_chinese_on_the_chinese_path(
    monkeypatch: pytest.MonkeyPatch, written: bytes
) -> None:
    monkeypatch.setenv("CAL_LANG", "zh")
    outcome = run(f"import os, sys, time\nos.write(int(sys.argv[1]), {written!r})\ntime.sleep(60)\n")
    assert outcome.status == "garbage"
    assert re.search("[\u4e00-\u9fff]", outcome.detail) and not re.search("[a-z]{3,}", outcome.detail), outcome.detail


def test_asking_a_closed_session_is_said_in_chinese_on_the_chinese_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAL_LANG", "zh")
    with sandbox.SandboxSession("import sandbox_io\nsandbox_io.receive()\n", payload=None, files={}) as child:
        child.close()
        with pytest.raises(sandbox.SandboxStopped) as stopped:
            child.ask("anything")
    said = str(stopped.value)
    assert re.search("[\u4e00-\u9fff]", said) and not re.search("[a-z]{3,}", said), said
