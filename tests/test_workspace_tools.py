"""The two demo tools stay inside their workspace and refuse bad arguments with clear errors."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest

from codeagent_lite import JsonTextModelAdapter, ScriptedProvider
from codeagent_lite.agent.loop import MAX_TOOL_RESULT_CHARS, ToolResultStep, run_agent
from codeagent_lite.agent.workspace_tools import (
    MAX_LIST_CHARS,
    MAX_LIST_ENTRIES,
    MAX_READ_CHARS,
    Tool,
    ToolError,
    WorkspaceError,
    list_files_tool,
    read_file_tool,
    resolve_in_workspace,
    workspace_tools,
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "README.md").write_text("# Demo\nhello\n", encoding="utf-8")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n", encoding="utf-8")
    (root / "src" / "zeta.txt").write_text("z", encoding="utf-8")
    (root / "src" / "Alpha.txt").write_text("A", encoding="utf-8")
    (root / "src" / "pkg").mkdir()
    (tmp_path / "secret.txt").write_text("TOP SECRET", encoding="utf-8")
    return root


@pytest.fixture
def read_file(workspace: Path) -> Tool:
    return read_file_tool(workspace)


@pytest.fixture
def list_files(workspace: Path) -> Tool:
    return list_files_tool(workspace)


# --------------------------------------------------------------------------- read_file


def test_read_file_returns_the_text(read_file: Tool) -> None:
    assert read_file.run({"path": "README.md"}) == "# Demo\nhello\n"
    assert read_file.run({"path": "src/main.py"}) == "print('hi')\n"
    assert read_file.run({"path": "./src/main.py"}) == "print('hi')\n"


def test_read_file_keeps_line_endings(workspace: Path, read_file: Tool) -> None:
    (workspace / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    assert read_file.run({"path": "crlf.txt"}) == "a\r\nb\r\n"


@pytest.mark.parametrize("path", ["../secret.txt", "src/../../secret.txt", "..", "src/.."])
def test_dot_dot_is_refused(read_file: Tool, path: str) -> None:
    with pytest.raises(ToolError, match=r"contains '\.\.'"):
        read_file.run({"path": path})


def test_absolute_path_is_refused_even_inside_the_workspace(workspace: Path, read_file: Tool) -> None:
    with pytest.raises(ToolError, match="is absolute"):
        read_file.run({"path": str(workspace.parent / "secret.txt")})
    with pytest.raises(ToolError, match="is absolute"):
        read_file.run({"path": str(workspace / "README.md")})


def test_symlink_pointing_outside_is_refused_and_not_read(workspace: Path, read_file: Tool) -> None:
    (workspace / "innocent.txt").symlink_to(workspace.parent / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace") as caught:
        read_file.run({"path": "innocent.txt"})
    assert "TOP SECRET" not in str(caught.value)


def test_symlinked_folder_pointing_outside_is_refused(workspace: Path, read_file: Tool, list_files: Tool) -> None:
    (workspace / "escape").symlink_to(workspace.parent, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the workspace"):
        read_file.run({"path": "escape/secret.txt"})
    with pytest.raises(ToolError, match="outside the workspace"):
        list_files.run({"path": "escape"})


def test_symlink_staying_inside_is_allowed(workspace: Path, read_file: Tool) -> None:
    (workspace / "link.md").symlink_to(workspace / "README.md")
    assert read_file.run({"path": "link.md"}) == "# Demo\nhello\n"


def test_symlink_loop_is_an_error_not_a_crash(workspace: Path, read_file: Tool) -> None:
    (workspace / "loop_a").symlink_to(workspace / "loop_b")
    (workspace / "loop_b").symlink_to(workspace / "loop_a")
    with pytest.raises(ToolError):
        read_file.run({"path": "loop_a"})


def test_workspace_given_through_a_symlink_still_works(tmp_path: Path, workspace: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(workspace, target_is_directory=True)
    assert read_file_tool(alias).run({"path": "README.md"}) == "# Demo\nhello\n"


def test_nul_byte_is_refused(read_file: Tool) -> None:
    with pytest.raises(ToolError, match="NUL"):
        read_file.run({"path": "README.md\x00.txt"})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"path": 7}, "path must be a string, found the number 7"),
        ({"path": None}, "path must be a string, found null"),
        ({"path": ["README.md"]}, "path must be a string, found an array"),
        ({"path": True}, "path must be a string, found true"),
        ({}, "missing argument 'path'"),
        ({"path": "README.md", "encoding": "latin-1"}, "unknown argument 'encoding'"),
        ({"file": "README.md"}, "unknown argument 'file'"),
        ({"path": "   "}, "path must not be blank"),
    ],
)
def test_read_file_arguments_are_checked_strictly(read_file: Tool, arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        read_file.run(arguments)


def test_missing_file_and_folder_are_errors(read_file: Tool) -> None:
    with pytest.raises(ToolError, match=r"no such file: 'nope\.txt'"):
        read_file.run({"path": "nope.txt"})
    with pytest.raises(ToolError, match="is a folder"):
        read_file.run({"path": "src"})


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="the descriptor walk is POSIX's")
def test_an_opened_file_whose_stat_fails_is_closed_and_refused(
    read_file: Tool, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[int] = []
    real_open, real_stat = os.open, os.stat

    def recording_open(*args: object, **kwargs: object) -> int:
        descriptor = real_open(*args, **kwargs)  # type: ignore[arg-type]
        opened.append(descriptor)
        return descriptor

    def failing_stat(target: object, *args: object, **kwargs: object) -> os.stat_result:
        if isinstance(target, int):
            raise OSError(5, "Input/output error")
        return real_stat(target, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "stat", failing_stat)
    with pytest.raises(ToolError, match=r"README\.md"):
        read_file.run({"path": "README.md"})
    monkeypatch.undo()
    assert opened
    for descriptor in opened:
        with pytest.raises(OSError):
            os.fstat(descriptor)  # closed


def test_non_utf8_file_is_an_error(workspace: Path, read_file: Tool) -> None:
    (workspace / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ToolError, match="not UTF-8"):
        read_file.run({"path": "blob.bin"})


def test_large_file_is_capped_with_a_note(workspace: Path, read_file: Tool) -> None:
    (workspace / "big.txt").write_text("x" * (MAX_READ_CHARS + 500), encoding="utf-8")
    text = read_file.run({"path": "big.txt"})
    body, note = text.rsplit("\n", 1)
    assert body == "x" * MAX_READ_CHARS
    assert note == f"[truncated: showing the first {MAX_READ_CHARS} characters of a {MAX_READ_CHARS + 500}-byte file]"


def test_a_bad_byte_past_the_shown_part_does_not_refuse_the_file(workspace: Path, read_file: Tool) -> None:
    (workspace / "log.txt").write_bytes("é".encode() * (MAX_READ_CHARS + 10) + b"\xff tail")
    body, note = read_file.run({"path": "log.txt"}).rsplit("\n", 1)
    assert body == "é" * MAX_READ_CHARS
    assert note.endswith(f"of a {2 * (MAX_READ_CHARS + 10) + 6}-byte file]")


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_the_cap_counts_characters_whatever_their_utf8_length(workspace: Path, read_file: Tool, width: int) -> None:
    char = {1: "a", 2: "é", 3: "中", 4: "😀"}[width]
    (workspace / "wide.txt").write_text(char * (MAX_READ_CHARS + 1), encoding="utf-8")
    body, note = read_file.run({"path": "wide.txt"}).rsplit("\n", 1)
    assert body == char * MAX_READ_CHARS and note.startswith("[truncated:")


def test_a_bad_byte_right_after_the_shown_part_does_not_refuse_the_file(workspace: Path, read_file: Tool) -> None:
    (workspace / "log.txt").write_bytes(b"a" * MAX_READ_CHARS + b"\xff")
    body, note = read_file.run({"path": "log.txt"}).rsplit("\n", 1)
    assert body == "a" * MAX_READ_CHARS
    assert note == f"[truncated: showing the first {MAX_READ_CHARS} characters of a {MAX_READ_CHARS + 1}-byte file]"


def test_a_bad_byte_in_the_shown_part_refuses_the_file(workspace: Path, read_file: Tool) -> None:
    (workspace / "log.txt").write_bytes(b"a" * (MAX_READ_CHARS - 1) + b"\xff" + b"a" * 100)
    with pytest.raises(ToolError, match="not UTF-8"):
        read_file.run({"path": "log.txt"})


def test_file_exactly_at_the_cap_is_not_truncated(workspace: Path, read_file: Tool) -> None:
    (workspace / "edge.txt").write_text("y" * MAX_READ_CHARS, encoding="utf-8")
    assert read_file.run({"path": "edge.txt"}) == "y" * MAX_READ_CHARS


# --------------------------------------------------------------------------- list_files


def test_listing_is_sorted_and_marks_folders(list_files: Tool) -> None:
    assert list_files.run({"path": "src"}) == "Alpha.txt\nmain.py\npkg/\nzeta.txt"
    assert list_files.run({}) == "README.md\nsrc/"
    assert list_files.run({"path": "."}) == list_files.run({})


def test_listing_is_deterministic_whatever_the_creation_order(tmp_path: Path) -> None:
    listings = []
    for order in (["b", "a", "c"], ["c", "b", "a"]):
        root = tmp_path / "".join(order)
        root.mkdir()
        for name in order:
            (root / name).write_text(name, encoding="utf-8")
        listings.append(list_files_tool(root).run({}))
    assert listings == ["a\nb\nc", "a\nb\nc"]


def test_listing_marks_symlinks_without_following_them(workspace: Path, list_files: Tool) -> None:
    (workspace / "out").symlink_to(workspace.parent, target_is_directory=True)
    assert list_files.run({}) == "README.md\nout@\nsrc/"


def test_empty_folder(list_files: Tool) -> None:
    assert list_files.run({"path": "src/pkg"}) == "(empty folder)"


def test_listing_errors(list_files: Tool) -> None:
    with pytest.raises(ToolError, match="no such folder"):
        list_files.run({"path": "missing"})
    with pytest.raises(ToolError, match="is a file"):
        list_files.run({"path": "README.md"})
    with pytest.raises(ToolError, match=r"contains '\.\.'"):
        list_files.run({"path": ".."})
    with pytest.raises(ToolError, match="is absolute"):
        list_files.run({"path": "/"})
    with pytest.raises(ToolError, match="unknown argument 'recursive'"):
        list_files.run({"path": ".", "recursive": True})


def test_long_listing_is_capped(tmp_path: Path) -> None:
    for number in range(MAX_LIST_ENTRIES + 3):
        (tmp_path / f"f{number:04d}").write_text("", encoding="utf-8")
    lines = list_files_tool(tmp_path).run({}).splitlines()
    assert len(lines) == MAX_LIST_ENTRIES + 1
    assert lines[-1] == f"[truncated: showing {MAX_LIST_ENTRIES} of {MAX_LIST_ENTRIES + 3} entries]"


# --------------------------------------------------------------------------- specs and construction


def test_specs_describe_strict_arguments(workspace: Path) -> None:
    read_tool, list_tool = workspace_tools(workspace)
    assert (read_tool.name, list_tool.name) == ("read_file", "list_files")
    assert read_tool.spec.input_schema["required"] == ["path"]
    assert read_tool.spec.input_schema["additionalProperties"] is False
    assert list_tool.spec.input_schema["properties"]["path"]["default"] == "."
    assert "required" not in list_tool.spec.input_schema


def test_workspace_must_be_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="existing folder"):
        read_file_tool(tmp_path / "missing")
    (tmp_path / "file").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="existing folder"):
        list_files_tool(tmp_path / "file")


def test_resolve_in_workspace_returns_the_real_path(workspace: Path) -> None:
    assert resolve_in_workspace(workspace, "src/main.py") == (workspace / "src" / "main.py").resolve()
    with pytest.raises(ToolError, match="path must be a string"):
        resolve_in_workspace(workspace, b"README.md")


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_unreadable_file_is_an_error(workspace: Path, read_file: Tool) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can read any file")
    target = workspace / "locked.txt"
    target.write_text("no", encoding="utf-8")
    target.chmod(0)
    try:
        with pytest.raises(ToolError, match=r"cannot read 'locked\.txt'"):
            read_file.run({"path": "locked.txt"})
    finally:
        target.chmod(0o600)


def test_without_dir_fd_the_tools_answer_as_the_walk_does(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows has no ``dir_fd``: there the tools check the resolved path and then open it, with the same words."""
    (workspace / "out").symlink_to(workspace.parent)
    paths = ["README.md", "src", "src/", "out/secret.txt", "out", "../secret.txt", "missing"]

    def answers() -> list[str]:
        said = []
        for tool in workspace_tools(workspace):
            for path in paths:
                try:
                    said.append(tool.run({"path": path}))
                except ToolError as error:
                    said.append(f"refused: {error}")
        return said

    walked = answers()
    assert not any("TOP SECRET" in answer for answer in walked)
    monkeypatch.setattr(sys.modules["codeagent_lite.agent.workspace_tools"], "_WALK_SUPPORTED", False)
    assert answers() == walked


def test_a_symlink_loop_or_a_chain_past_40_links_is_refused(workspace: Path) -> None:
    (workspace / "ping").symlink_to("pong")
    (workspace / "pong").symlink_to("ping")
    (workspace / "link41").write_text("end", encoding="utf-8")
    for number in range(41):
        (workspace / f"link{number}").symlink_to(f"link{number + 1}")
    read_file = read_file_tool(workspace)
    assert read_file.run({"path": "link1"}) == "end"  # 40 links, as many as Linux follows
    for path in ("ping", "link0"):
        with pytest.raises(ToolError, match="cannot be resolved: too many levels of symbolic links"):
            read_file.run({"path": path})


# --------------------------------------------------------------------------- the bug hunt's findings


def _listing_checked(listing: str, names: list[str], total: int) -> int:
    """``listing`` is whole lines of the first names by name, then the tool's own line saying how many it shows."""
    assert len(listing) <= MAX_LIST_CHARS
    *lines, marker = listing.split("\n")
    assert lines == names[: len(lines)]
    assert marker == f"[truncated: showing {len(lines)} of {total} entries]"
    return len(lines)


def test_a_listing_of_long_names_stays_under_its_character_cap_and_says_what_it_shows(tmp_path: Path) -> None:
    names = [f"{number:04d}_" + "n" * 60 for number in range(600)]
    for name in names:
        (tmp_path / name).write_text("", encoding="utf-8")
    assert 1 < _listing_checked(list_files_tool(tmp_path).run({}), names, 600) < MAX_LIST_ENTRIES
    # What the model is sent: the tool's own line, never the loop's cut in the middle of a name.
    assert MAX_LIST_CHARS <= MAX_TOOL_RESULT_CHARS * 0.9
    replies = [
        json.dumps({"type": "tool_call", "call_id": "c1", "tool_name": "list_files", "arguments": {"path": "."}}),
        json.dumps({"type": "final_answer", "content": "done"}),
    ]
    transcript = run_agent(JsonTextModelAdapter(ScriptedProvider(replies)), workspace_tools(tmp_path), "List it.")
    [sent] = [step for step in transcript.steps if isinstance(step, ToolResultStep)]
    assert not sent.capped
    assert sent.result.content.endswith(" of 600 entries]")


@pytest.mark.skipif(sys.platform != "linux", reason="names that are not UTF-8: Linux file systems take any bytes")
def test_a_listing_of_255_byte_names_that_are_not_utf8_stays_under_its_cap(tmp_path: Path) -> None:
    folder = os.open(tmp_path, os.O_RDONLY)
    try:
        for number in range(MAX_LIST_ENTRIES + 20):
            os.close(os.open(b"%03d" % number + b"\xff" * 252, os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=folder))
    finally:
        os.close(folder)
    names = sorted(repr(os.fsdecode(b"%03d" % number + b"\xff" * 252)) for number in range(MAX_LIST_ENTRIES + 20))
    assert _listing_checked(list_files_tool(tmp_path).run({}), names, MAX_LIST_ENTRIES + 20) >= 10


class _FakeEntry:
    """Just what ``list_files`` asks of an ``os.DirEntry``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def is_symlink(self) -> bool:
        return False

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return False


class _FakeScandir:
    """A folder of ``count`` entries made one at a time, in no particular order."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __enter__(self) -> Iterator[_FakeEntry]:
        # 7919 is prime, so (n * 7919) % count runs through every number below count once.
        return (_FakeEntry(f"{(number * 7919) % self.count:06d}") for number in range(self.count))

    def __exit__(self, *exc_info: type[BaseException] | BaseException | TracebackType | None) -> None:
        pass


def test_a_huge_folder_is_read_keeping_only_the_entries_shown(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    count = 100_000
    monkeypatch.setattr(os, "scandir", lambda target: _FakeScandir(count))
    list_files = list_files_tool(workspace)
    tracemalloc.start()
    try:
        listing = list_files.run({"path": "src"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    monkeypatch.undo()
    expected = [f"{number:06d}" for number in range(MAX_LIST_ENTRIES)]
    assert _listing_checked(listing, expected, count) == MAX_LIST_ENTRIES
    assert peak < 1_000_000  # all 100,000 names at once took some 8 MB


def test_the_listing_is_sorted_by_name_not_by_its_display_lines(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    for name in ("a-b", "a.txt", "b\tc"):
        (tmp_path / name).write_text("", encoding="utf-8")
    assert list_files_tool(tmp_path).run({}).split("\n") == ["a/", "a-b", "a.txt", "'b\\tc'"]


def _fifo_writer(fifo: Path) -> threading.Thread:
    """A thread blocked opening ``fifo`` to write, until something opens it to read."""
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()
    return writer


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_is_refused_without_being_opened(workspace: Path) -> None:
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    writer = _fifo_writer(fifo)
    try:
        for tool in workspace_tools(workspace):
            with pytest.raises(ToolError, match="named pipe"):
                tool.run({"path": "pipe"})
        writer.join(0.3)
        assert writer.is_alive(), "the tool opened the FIFO: its blocked writer was let go"
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets the writer go
        writer.join(5)


_TTY_CHILD = """
import os
from codeagent_lite.agent.workspace_tools import ToolError, workspace_tools

def controlling_tty():
    with open("/proc/self/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[4])

master, slave = os.openpty()
folder, name = os.path.split(os.ttyname(slave))
os.close(slave)
before = controlling_tty()
for tool in workspace_tools(folder):
    try:
        tool.run({"path": name})
    except ToolError as error:
        print(error)
print(before, controlling_tty())
"""


@pytest.mark.skipif(sys.platform != "linux", reason="/proc and /dev/pts")
def test_a_terminal_device_is_refused_without_becoming_the_controlling_terminal() -> None:
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.run(
        [sys.executable, "-c", _TTY_CHILD], start_new_session=True, capture_output=True, text=True, env=env, timeout=60
    )
    assert child.returncode == 0, child.stderr
    *refusals, ttys = child.stdout.splitlines()
    assert ttys == "0 0"  # no controlling terminal before the calls, nor after
    assert len(refusals) == 2 and all("is a character device, not a regular file or folder" in r for r in refusals)


@pytest.mark.skipif(not hasattr(os, "O_NOCTTY"), reason="POSIX open flags")
def test_every_open_under_the_workspace_has_o_noctty(read_file: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    flags: list[int] = []
    real_open = os.open

    def recording_open(path: str, flag: int, *args: object, **kwargs: object) -> int:
        if "dir_fd" in kwargs:
            flags.append(flag)
        return real_open(path, flag, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", recording_open)
    assert read_file.run({"path": "src/main.py"}) == "print('hi')\n"
    monkeypatch.undo()
    assert len(flags) == 2 and all(flag & os.O_NOCTTY for flag in flags)


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets")
def test_special_files_are_called_what_they_are(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.mkfifo(workspace / "pipe")
    monkeypatch.chdir(workspace)  # a relative name: a socket's path is limited to about 100 bytes
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        answers = {}
        for tool in workspace_tools(workspace):
            for path in ("pipe", "sock"):
                with pytest.raises(ToolError) as caught:
                    tool.run({"path": path})
                answers[tool.name, path] = str(caught.value)
    tail = "not a regular file or folder; neither tool can open it"
    assert answers == {
        ("read_file", "pipe"): f"'pipe' is a named pipe (FIFO), {tail}",
        ("list_files", "pipe"): f"'pipe' is a named pipe (FIFO), {tail}",
        ("read_file", "sock"): f"'sock' is a socket, {tail}",
        ("list_files", "sock"): f"'sock' is a socket, {tail}",
    }
    if Path("/dev/null").is_char_device():
        for tool in workspace_tools("/dev"):
            with pytest.raises(ToolError, match=f"^'null' is a character device, {tail}$"):
                tool.run({"path": "null"})


def test_names_that_read_as_the_listings_own_words_are_quoted(tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "(empty folder)").write_text("", encoding="utf-8")
    assert list_files_tool(lonely).run({}) == "'(empty folder)'"
    forged = tmp_path / "forged"
    forged.mkdir()
    for name in ("notes.txt", "[truncated: showing 1 of 90000 entries]", "zz [truncated: showing 500 of 90 entries]"):
        (forged / name).write_text("", encoding="utf-8")
    assert list_files_tool(forged).run({}).split("\n") == [
        "'[truncated: showing 1 of 90000 entries]'",
        "notes.txt",
        "'zz [truncated: showing 500 of 90 entries]'",
    ]


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="the descriptor walk is POSIX's")
def test_a_symlink_whose_target_ends_in_a_slash_names_a_folder(workspace: Path) -> None:
    for name, target in (("dotlink", "README.md/."), ("slashlink", "README.md/"), ("deeplink", "src/main.py/")):
        (workspace / name).symlink_to(target)
        with pytest.raises(NotADirectoryError):
            (workspace / name).open(encoding="utf-8")  # as the system reads it
        for tool in workspace_tools(workspace):
            with pytest.raises(ToolError, match=f"^path '{name}' goes through a file as if it were a folder$"):
                tool.run({"path": name})
    (workspace / "srclink").symlink_to("src/")
    (workspace / "srcdot").symlink_to("./src/.")
    read_file, list_files = workspace_tools(workspace)
    assert list_files.run({"path": "srclink"}) == list_files.run({"path": "srcdot"}) == list_files.run({"path": "src"})
    assert read_file.run({"path": "srclink/main.py"}) == "print('hi')\n"


@pytest.mark.parametrize("walk", [True, False])
def test_a_workspace_removed_or_replaced_later_is_named_not_the_path(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, walk: bool
) -> None:
    monkeypatch.setattr(sys.modules["codeagent_lite.agent.workspace_tools"], "_WALK_SUPPORTED", walk)
    tools = workspace_tools(workspace)
    shutil.rmtree(workspace)
    for tool in tools:
        for path in ("README.md", "."):
            with pytest.raises(ToolError, match=r"^the workspace folder itself is gone: it was removed after"):
                tool.run({"path": path})
    workspace.write_text("now a file", encoding="utf-8")
    for tool in tools:
        for path in ("README.md", "."):
            with pytest.raises(ToolError, match=r"^the workspace folder itself is no longer a folder: it was replaced"):
                tool.run({"path": path})


def test_a_workspace_the_system_cannot_look_up_is_a_value_error_saying_why(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"existing folder: .*\(File name too long\)"):
        read_file_tool(tmp_path / ("x" * 300))
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(ValueError, match=r"\((a symlink loop|Too many levels of symbolic links)\)$"):
        list_files_tool(tmp_path / "loop")


@pytest.mark.parametrize("given", ["", "a\0b"])
def test_an_empty_or_impossible_workspace_name_is_refused_as_data(given: str) -> None:
    with pytest.raises(WorkspaceError) as caught:
        workspace_tools(given)
    assert caught.value.given == given and str(caught.value).startswith(
        f"workspace must be an existing folder: {given!r}"
    )
