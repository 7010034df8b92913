"""Two demo tools, ``read_file`` and ``list_files``, confined to one workspace folder.

A tool's arguments are untrusted (a model, or text injected into a file it read, can ask for ``../../etc/passwd``);
every refusal is a ``ToolError`` whose message goes back to the model, so it can change course. Checking a path and
then opening it leaves a window to swap a folder for a symlink, so where ``os.open`` has ``dir_fd`` and
``O_NOFOLLOW`` the tools walk the path from a descriptor of the workspace, following each symlink themselves only
while it stays inside. What is neither a folder nor a regular file (a FIFO, a socket, a device) is refused before
it is opened, since opening one acts. Known limits: without ``dir_fd`` (Windows) they check the resolved path, then
use it, and a symlink's target ending in "/" is not held to name a folder; a hard link to a file outside cannot be
told from a file inside.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from ..display import error_reason, json_kind, quote
from ..kernel_types import ToolSpec

_Arguments = TypeVar("_Arguments", bound=BaseModel)

MAX_READ_CHARS = 20_000
"""Longest text ``read_file`` returns; more would flood the model's context and the bill."""
MAX_LIST_ENTRIES = 500
"""Most entries ``list_files`` returns for one folder, for the same reason."""
MAX_LIST_CHARS = 20_000
"""Longest text ``list_files`` returns, its truncation line included: 500 entries are not a size (a 255-byte name
that is not UTF-8 takes some 1,500 characters escaped), and the loop's own cap must never cut a listing mid-name."""
MAX_PATH_CHARS = 1024
"""Longer path arguments are refused before any system call."""
_MAX_SYMLINKS = 40  # followed in one path before it counts as a loop (Linux's own limit)
_PATH_QUOTE_CHARS = 80
_MARKER_ROOM = 80  # kept for the "[truncated: showing N of M entries]" line: 33 characters and two counts
_OWN_LINES = ("(empty folder)", "[truncated:")  # list_files' own words, which no listed name may pass for


class ToolError(Exception):
    """A tool refused its arguments or could not do its job; the message is meant for the model."""


@dataclass(frozen=True, slots=True)
class Tool:
    """What the model is told (``spec``) and what runs (``run``): ``run`` gets the arguments exactly as the model
    sent them (the parser only checked they form an object), validates them itself and raises ``ToolError``."""

    spec: ToolSpec
    run: Callable[[Mapping[str, Any]], str]

    @property
    def name(self) -> str:
        return self.spec.name


class ReadFileArguments(BaseModel):
    """Strict, so ``{"path": 1}`` or an extra key is refused, not guessed."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    path: StrictStr = Field(description="A file path relative to the workspace root, e.g. 'README.md'.")


class ListFilesArguments(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    path: StrictStr = Field(default=".", description="A folder path relative to the workspace root; '.' is the root.")


def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    # Made from the model that validates the call, so the spec cannot drift from the check.
    schema = model.model_json_schema()
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return {key: value for key, value in schema.items() if key not in ("title", "description")}


_ARGUMENT_PROBLEMS = {"extra_forbidden": "unknown argument", "missing": "missing argument"}


def _validate_arguments(model: type[_Arguments], tool_name: str, arguments: Mapping[str, Any]) -> _Arguments:
    """pydantic's verdict in words a model can act on, one problem per argument."""
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as error:
        problems = []
        for detail in error.errors(include_url=False):
            name = str(detail["loc"][0]) if detail["loc"] else "arguments"
            if detail["type"] in _ARGUMENT_PROBLEMS:
                problems.append(f"{_ARGUMENT_PROBLEMS[detail['type']]} {_shown(name)}")
            elif detail["type"] == "string_type":
                problems.append(f"{name} must be a string, found {json_kind(arguments.get(name))}")
            else:
                problems.append(f"{name}: {detail['msg']}")
        accepted = ", ".join(model.model_fields)
        raise ToolError(f"{tool_name}: {'; '.join(problems)} ({tool_name} takes: {accepted})") from None


def _shown(path: str) -> str:
    return quote(path, _PATH_QUOTE_CHARS)


def _check_path_text(path: object) -> PurePath:
    """The cheap refusals first, each with a precise reason: not text, blank, NUL, absolute, ``..``."""
    if not isinstance(path, str):
        raise ToolError(f"path must be a string, found {json_kind(path)}")
    if not path.strip():
        raise ToolError("path must not be blank")
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(f"path must be at most {MAX_PATH_CHARS} characters, found {len(path)}")
    if "\x00" in path:
        raise ToolError("path must not contain a NUL character")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"path {_shown(path)} holds a lone surrogate, which no file name can hold") from None
    pure = PurePath(path)
    if pure.is_absolute() or path.startswith(("/", "\\")):
        raise ToolError(f"path {_shown(path)} is absolute; use a path relative to the workspace root")
    if ".." in pure.parts:
        raise ToolError(f"path {_shown(path)} contains '..'; paths must stay inside the workspace")
    return pure


def _outside(shown: str) -> ToolError:
    return ToolError(f"path {shown} leads outside the workspace (through a symlink); refused")


def resolve_in_workspace(workspace: Path, path: object) -> Path:
    """Where ``path`` leads, every symlink resolved, or ``ToolError`` unless that lies inside ``workspace``: a
    harmless-looking symlink pointing outside is refused. The tools open through ``_opened``."""
    pure = _check_path_text(path)
    root = workspace.resolve()
    try:
        resolved = (root / pure).resolve()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop on Python < 3.13
        raise ToolError(f"path {_shown(str(path))} cannot be resolved: {error_reason(error)}") from None
    if not resolved.is_relative_to(root):
        raise _outside(_shown(str(path)))
    return resolved


_WALK_SUPPORTED = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
_WALK_SUPPORTED = _WALK_SUPPORTED and os.stat in os.supports_dir_fd and os.stat in os.supports_follow_symlinks
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# Special files are refused before they are opened; should one take a regular file's place in between, O_NONBLOCK
# keeps a FIFO from hanging the tool and O_NOCTTY keeps a terminal from becoming the process's controlling one.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | _O_CLOEXEC
_OPEN_FLAGS |= getattr(os, "O_NOCTTY", 0)


@dataclass(eq=False)
class _SpecialFile(Exception):
    """The path names neither a folder nor a regular file, found so without opening it: opening one acts (a FIFO's
    blocked writer is let go into a pipe nobody reads, a terminal can become the controlling one)."""

    mode: int


def _open_component(parent: int, name: str, *, last: bool) -> int | str:
    """A descriptor for ``name`` in ``parent``, or its target text when ``name`` is a symlink. The last step is
    looked at first, links not followed, and opened only if it is a folder or a regular file; the steps before it
    open with ``O_DIRECTORY``, which refuses anything but a folder before opening it."""
    if last:
        mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            return os.readlink(name, dir_fd=parent)
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise _SpecialFile(mode)
    try:
        return os.open(name, _OPEN_FLAGS | (0 if last else _O_DIRECTORY), dir_fd=parent)
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise
        try:
            return os.readlink(name, dir_fd=parent)
        except OSError:
            raise error from None


def _link_parts(root: Path, target: str, shown: str) -> tuple[Sequence[str], bool]:
    """A symlink's target as components to walk, and whether they start again from the workspace's root. A target
    ending in "/" or "/." names a folder, as in the model's own path: PurePath drops that ending, so a "." is kept
    last, and the step before it opens as a folder or not at all."""
    folder = (".",) if target.endswith(("/", "/.")) else ()
    if not os.path.isabs(target):
        return (*PurePath(target).parts, *folder), False
    if not PurePath(target).is_relative_to(root):
        raise _outside(shown)
    return (*PurePath(target).relative_to(root).parts, *folder), True


def _walk(root: Path, parts: Sequence[str], shown: str) -> int:
    """A descriptor of what ``parts`` names; ``..`` steps back up the stack of open folders, never past the root."""
    stack = [os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)]
    pending, links = list(reversed(parts)), 0
    try:
        while pending:
            name = pending.pop()
            if name == "..":
                if len(stack) == 1:
                    raise _outside(shown)
                os.close(stack.pop())
            if name in ("", ".", ".."):
                continue
            target = _open_component(stack[-1], name, last=not pending)
            if isinstance(target, int):
                stack.append(target)
                continue
            links += 1
            if links > _MAX_SYMLINKS:  # worded where every open failure is, like the system's own ELOOP
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
            link_parts, from_root = _link_parts(root, target, shown)
            while from_root and len(stack) > 1:
                os.close(stack.pop())
            pending.extend(reversed(link_parts))
        return stack.pop()
    finally:
        for fd in stack:
            os.close(fd)


@contextmanager
def _opened(root: Path, path: str, kind: str) -> Iterator[tuple[int | Path, os.stat_result]]:
    """``path`` checked and opened as one act where the platform allows (else its checked, resolved path), and
    what it is; ``kind`` names what a missing path is."""
    pure, shown = _check_path_text(path), _shown(path)
    try:
        target = _walk(root, pure.parts, shown) if _WALK_SUPPORTED else resolve_in_workspace(root, path)
    except _SpecialFile as special:
        raise ToolError(_not_regular(shown, special.mode)) from None
    except OSError as error:
        raise ToolError(_open_failure(root, shown, error, kind)) from None
    try:
        try:
            info = os.stat(target)
        except OSError as error:
            raise ToolError(_open_failure(root, shown, error, kind)) from None
        problem = _type_problem(path, shown, info.st_mode)
        if problem:  # without the walk, "." is the workspace folder itself, which may have become a file
            raise ToolError(_root_problem(root) or problem)
        yield target, info
    finally:
        if isinstance(target, int):
            os.close(target)


_OPEN_FAILURES = {
    errno.ENOENT: "no such {kind}: {shown}",
    errno.ENOTDIR: "path {shown} goes through a file as if it were a folder",
    errno.ELOOP: "path {shown} cannot be resolved: too many levels of symbolic links",
}


def _open_failure(root: Path, shown: str, error: OSError, kind: str) -> str:
    template = _OPEN_FAILURES.get(error.errno or 0, "cannot open {shown}: {reason}")
    return _root_problem(root) or template.format(kind=kind, shown=shown, reason=error_reason(error))


_NO_PATH_OPENS = "after the tools were made; no path in it can be opened"


def _root_problem(root: Path) -> str | None:
    """Why nothing opens when the workspace folder itself was removed or replaced after the tools were made: the
    model's path is not to blame then."""
    try:
        if stat.S_ISDIR(os.stat(root).st_mode):
            return None
    except (FileNotFoundError, NotADirectoryError):
        return f"the workspace folder itself is gone: it was removed {_NO_PATH_OPENS}"
    except OSError:
        return None
    return f"the workspace folder itself is no longer a folder: it was replaced {_NO_PATH_OPENS}"


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(shown: str, mode: int) -> str:
    found = next((name for is_kind, name in _SPECIAL_KINDS if is_kind(mode)), "a special file")
    return f"{shown} is {found}, not a regular file or folder; neither tool can open it"


def _type_problem(path: str, shown: str, mode: int) -> str | None:
    """Why what ``path`` led to cannot be used: a path ending in "/" or "/." that is not a folder, or something
    neither a folder nor a regular file (the walk refuses those unopened; this holds without it, and after a swap)."""
    # PurePath drops a trailing "/" (and "/."); POSIX open() does not: "notes.md/" names a folder, as "." does.
    last = path.replace(os.altsep or os.sep, os.sep).rsplit(os.sep, 1)[-1]
    if last in ("", ".") and not stat.S_ISDIR(mode):
        return _OPEN_FAILURES[errno.ENOTDIR].format(shown=shown)
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return None
    return _not_regular(shown, mode)


class WorkspaceError(ValueError):
    """The folder given cannot be the workspace. As data, so the CLI words it in the learner's language:
    ``given`` is the name as given, ``reason`` what the system said (None when it is simply no folder)."""

    def __init__(self, given: str, reason: str | None) -> None:
        self.given, self.reason = given, reason
        super().__init__(f"workspace must be an existing folder: {self.found}")

    @property
    def found(self) -> str:
        return repr(self.given) if self.reason is None else f"{self.given!r} ({self.reason})"


def _check_workspace(workspace: str | os.PathLike[str]) -> Path:
    """ "" is refused, not read as the current folder: it is what an unset variable gives (``--workspace "$X"``)."""
    given = os.fspath(workspace)
    if not given:
        raise WorkspaceError(given, None)
    try:
        root = Path(given).resolve()
        mode = os.stat(root).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = 0
    except RuntimeError:  # a symlink loop, on Python < 3.13
        raise WorkspaceError(given, "a symlink loop") from None
    except (OSError, ValueError) as error:  # a name too long, a folder we may not look into, a NUL
        raise WorkspaceError(given, error_reason(error)) from None
    if not stat.S_ISDIR(mode):
        raise WorkspaceError(given, None)
    return root


def read_file_tool(workspace: str | os.PathLike[str]) -> Tool:
    """``read_file(path)``: the UTF-8 text of one file in the workspace, capped at ``MAX_READ_CHARS``."""
    root = _check_workspace(workspace)

    def read_file(arguments: Mapping[str, Any]) -> str:
        path = _validate_arguments(ReadFileArguments, "read_file", arguments).path
        shown = _shown(path)
        with _opened(root, path, "file") as (target, info):
            if stat.S_ISDIR(info.st_mode):  # else a regular file: _opened refuses the rest
                raise ToolError(f"{shown} is a folder, not a file; use list_files to see what it holds")
            try:
                with open(os.dup(target) if isinstance(target, int) else target, "rb") as file:
                    data = file.read(_READ_BYTES)
                    size = max(os.fstat(file.fileno()).st_size, len(data))  # now, not at the stat before the read
            except OSError as error:
                raise ToolError(f"cannot read {shown}: {error_reason(error)}") from None
        if (text := _utf8_prefix(data)) is None:
            raise ToolError(f"{shown} is not UTF-8 text")
        shown_text = text[:MAX_READ_CHARS]
        if len(shown_text.encode("utf-8")) < len(data):
            note = f"[truncated: showing the first {MAX_READ_CHARS} characters of a {size}-byte file]"
            return shown_text + "\n" + note
        return shown_text

    description = f"Read a UTF-8 text file inside the workspace (at most {MAX_READ_CHARS} characters are returned)."
    return Tool(ToolSpec("read_file", description, _input_schema(ReadFileArguments)), read_file)


_READ_BYTES = 4 * MAX_READ_CHARS + 1
"""Enough bytes for the cap's characters, whatever their UTF-8 lengths, and one to tell that more follow."""


def _utf8_prefix(data: bytes) -> str | None:
    """The text, line endings as they are; only the part shown must be UTF-8 (a bad byte further on, or a
    character the read cut in two, is not shown anyway). None when the shown part is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        text = data[: error.start].decode("utf-8")
        return text if len(text) >= MAX_READ_CHARS else None


def _entry_line(entry: os.DirEntry[str]) -> str:
    """A name that could be read as something else (not printable, ending with a mark: ``x@`` is a file, not the
    symlink ``x``, starting with a quote, or passing for the tool's own words) is quoted: so a line starting with a
    quote is always a literal, a mark always a mark, and the tool's words always its own."""
    name = entry.name
    own_words = name == _OWN_LINES[0] or _OWN_LINES[1] in name
    if not name.isprintable() or name.endswith(("@", "/")) or name.startswith(("'", '"')) or own_words:
        name = repr(name)
    # follow_symlinks=False: listing must not touch what a link points to (it may be outside).
    if entry.is_symlink():
        return name + "@"
    return name + ("/" if entry.is_dir(follow_symlinks=False) else "")


def _first_by_name(entries: Iterator[os.DirEntry[str]]) -> tuple[list[os.DirEntry[str]], int]:
    """The ``MAX_LIST_ENTRIES`` entries first by name, in order, and how many there are: no more than those are
    kept while the folder is read, so a folder of a million entries costs the memory of a small one."""
    counter = itertools.count()  # zip draws from it once per entry: its next number is how many there were
    counted = (entry for entry, _ in zip(entries, counter, strict=False))
    return heapq.nsmallest(MAX_LIST_ENTRIES, counted, key=lambda entry: entry.name), next(counter)


def _listing(lines: Sequence[str], total: int) -> str:
    """The lines that fit in ``MAX_LIST_CHARS``, then a line saying how many of the ``total`` are shown, if not all."""
    ends = itertools.accumulate(len(line) + 1 for line in lines)
    shown = [line for line, end in zip(lines, ends, strict=True) if end <= MAX_LIST_CHARS - _MARKER_ROOM]
    if len(shown) < total:
        shown.append(f"[truncated: showing {len(shown)} of {total} entries]")
    return "\n".join(shown) or _OWN_LINES[0]


def list_files_tool(workspace: str | os.PathLike[str]) -> Tool:
    """``list_files(path=".")``: one folder's entries, sorted by name. The description does not mention quoted
    names: measured prompts for Gemma 3 270M depend on its exact words, and such names explain themselves."""
    root = _check_workspace(workspace)

    def list_files(arguments: Mapping[str, Any]) -> str:
        path = _validate_arguments(ListFilesArguments, "list_files", arguments).path
        shown = _shown(path)
        with _opened(root, path, "folder") as (target, info):
            if not stat.S_ISDIR(info.st_mode):
                raise ToolError(f"{shown} is a file, not a folder; use read_file to read it")
            try:
                with os.scandir(target) as entries:
                    first, total = _first_by_name(entries)
                    lines = [_entry_line(entry) for entry in first]  # formatted after sorting: sorted by name
            except OSError as error:
                raise ToolError(f"cannot list {shown}: {error_reason(error)}") from None
        return _listing(lines, total)

    description = (
        "List the entries of a folder inside the workspace, sorted by name. "
        "Folders end with '/', symbolic links with '@'."
    )
    return Tool(ToolSpec("list_files", description, _input_schema(ListFilesArguments)), list_files)


def workspace_tools(workspace: str | os.PathLike[str]) -> tuple[Tool, ...]:
    return (read_file_tool(workspace), list_files_tool(workspace))
