"""The two demo tools stay inside their workspace and refuse bad arguments with clear errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from codeagent_lite.agent.workspace_tools import (
    MAX_LIST_ENTRIES,
    MAX_READ_CHARS,
    Tool,
    ToolError,
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
