"""Two demo tools, ``read_file`` and ``list_files``, confined to one workspace folder.

The agent loop runs whatever tool call a model sends, so a tool must treat its
arguments as untrusted input: a model (or text injected into a file it read) can ask
for ``../../etc/passwd`` just as easily as for ``README.md``. Every path therefore goes
through ``resolve_in_workspace`` before anything is opened, and every refusal is a
``ToolError`` whose short message the loop hands back to the model as an error
``ToolResult``, so the model can change course instead of the loop crashing.

Checking a path and then opening it would leave a window in which another process swaps a
folder for a symlink. So where the platform allows it (Linux, macOS, the BSDs: ``os.open``
with ``dir_fd`` and ``O_NOFOLLOW``), the tools do not open a checked path at all: they walk
it one component at a time from a descriptor of the workspace folder, never letting the
system follow a link, and follow each symlink themselves only while it stays inside. What
is opened is then exactly what was checked. Known limits: where ``dir_fd`` is missing
(Windows) the tools fall back to checking the resolved path and opening it, and a hard
link to a file outside the workspace is indistinguishable from a file inside (a hard link
has no "outside"; only the one who made it could have prevented it).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from ..display import json_kind, quote
from ..kernel_types import ToolSpec

__all__ = [
    "MAX_LIST_ENTRIES",
    "MAX_READ_CHARS",
    "ListFilesArguments",
    "ReadFileArguments",
    "Tool",
    "ToolError",
    "list_files_tool",
    "read_file_tool",
    "resolve_in_workspace",
    "workspace_tools",
]

_Arguments = TypeVar("_Arguments", bound=BaseModel)

MAX_READ_CHARS = 20_000
"""Longest text ``read_file`` returns; more would flood the model's context and the bill."""

MAX_LIST_ENTRIES = 500
"""Most entries ``list_files`` returns for one folder, for the same reason."""

MAX_PATH_CHARS = 1024
"""Longest path argument looked at; longer ones are refused before any system call."""

_MAX_SYMLINKS = 40
"""Symlinks followed in one path before it counts as a loop (Linux's own limit)."""

_PATH_QUOTE_CHARS = 80


class ToolError(Exception):
    """A tool refused its arguments or could not do its job; the message is meant for the model."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the loop can offer: what the model is told (``spec``) and what runs (``run``).

    ``run`` receives the call's ``arguments`` dict exactly as the model sent it and
    returns the observation text. It validates its own arguments (the parser only
    checked that they form a JSON object) and raises ``ToolError`` to refuse.
    """

    spec: ToolSpec
    run: Callable[[Mapping[str, Any]], str]

    @property
    def name(self) -> str:
        return self.spec.name


# --------------------------------------------------------------------------- arguments


class ReadFileArguments(BaseModel):
    """Arguments of ``read_file``: strict, so ``{"path": 1}`` or an extra key is refused, not guessed."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    path: StrictStr = Field(description="A file path relative to the workspace root, e.g. 'README.md'.")


class ListFilesArguments(BaseModel):
    """Arguments of ``list_files``; the folder defaults to the workspace root."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    path: StrictStr = Field(default=".", description="A folder path relative to the workspace root; '.' is the root.")


def _input_schema(model: type[BaseModel]) -> dict[str, Any]:
    # Generated from the same model that validates the call, so the spec cannot drift from the check.
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def _validate_arguments(model: type[_Arguments], tool_name: str, arguments: Mapping[str, Any]) -> _Arguments:
    """Validate with pydantic, but answer in words a model can act on (one problem per argument)."""
    accepted = ", ".join(model.model_fields)
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as error:
        problems = []
        for detail in error.errors(include_url=False):
            name = str(detail["loc"][0]) if detail["loc"] else "arguments"
            if detail["type"] == "extra_forbidden":
                problems.append(f"unknown argument {quote(name, _PATH_QUOTE_CHARS)}")
            elif detail["type"] == "missing":
                problems.append(f"missing argument {quote(name, _PATH_QUOTE_CHARS)}")
            elif detail["type"] == "string_type":
                problems.append(f"{name} must be a string, found {json_kind(arguments.get(name))}")
            else:
                problems.append(f"{name}: {detail['msg']}")
        raise ToolError(f"{tool_name}: {'; '.join(problems)} ({tool_name} takes: {accepted})") from None


# --------------------------------------------------------------------------- confinement


def _shown(path: str) -> str:
    """A path as quoted back to the model: escaped, and short whatever it holds."""
    return quote(path, _PATH_QUOTE_CHARS)


def _check_path_text(path: object) -> PurePath:
    """The cheap refusals, each with a precise reason: not text, blank, NUL, absolute, ``..``."""
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


def resolve_in_workspace(workspace: Path, path: object) -> Path:
    """The real location of ``path`` inside ``workspace``, or ``ToolError`` if it is not inside.

    Cheap, explicit refusals come first so the model gets a precise reason (absolute
    path, ``..``, NUL). The decisive check is the last one: resolve every symlink and
    require the result to lie under the resolved workspace. A symlink inside the
    workspace that points outside is refused there, even though its name looks harmless.
    The tools themselves open through ``_open_in_workspace``, which makes this check and
    the open one act; this function says where a path leads.
    """
    pure = _check_path_text(path)
    root = workspace.resolve()
    try:
        resolved = (root / pure).resolve()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop on Python < 3.13
        raise ToolError(f"path {_shown(str(path))} cannot be resolved: {_reason(error)}") from None
    if not resolved.is_relative_to(root):
        raise ToolError(f"path {_shown(str(path))} leads outside the workspace (through a symlink); refused")
    return resolved


def _reason(error: BaseException) -> str:
    # strerror never holds a path; str(error) does, and the host's paths are not the model's business.
    strerror = getattr(error, "strerror", None)
    return strerror if isinstance(strerror, str) and strerror else type(error).__name__


# --------------------------------------------------------------------------- opening without a race

_WALK_SUPPORTED = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# O_NONBLOCK: opening a FIFO someone left in the workspace must not hang the tool.
_OPEN_FLAGS = os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class _Walk:
    """Walks a relative path from the workspace's descriptor, one component at a time.

    Each component is opened with ``O_NOFOLLOW`` relative to its parent's descriptor, so the
    system never follows a link on its own. A symlink met on the way is read and its target
    walked in its place; ``..`` steps back up the stack of open folders and may not leave the
    workspace; an absolute target must lie under the workspace's real path.
    """

    def __init__(self, root: Path, shown: str) -> None:
        self._root = root
        self._shown = shown
        self._stack = [os.open(root, os.O_RDONLY | _O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))]
        self._links = 0

    def close(self) -> None:
        while self._stack:
            os.close(self._stack.pop())

    def open(self, parts: list[str]) -> int:
        """A descriptor of what ``parts`` names; the caller closes it."""
        pending = list(reversed(parts))
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                self._step_up()
                continue
            target = self._open_component(name, last=not pending)
            if isinstance(target, str):
                pending.extend(reversed(self._link_parts(target)))
            else:
                self._stack.append(target)
        return self._stack.pop()

    def _step_up(self) -> None:
        if len(self._stack) == 1:
            raise ToolError(f"path {self._shown} leads outside the workspace (through a symlink); refused")
        os.close(self._stack.pop())

    def _open_component(self, name: str, *, last: bool) -> int | str:
        """A descriptor for ``name``, or the target text when ``name`` is a symlink."""
        parent = self._stack[-1]
        try:
            return os.open(name, _OPEN_FLAGS | (0 if last else _O_DIRECTORY), dir_fd=parent)
        except OSError as error:
            if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise
            try:
                return os.readlink(name, dir_fd=parent)
            except OSError:
                raise error from None

    def _link_parts(self, target: str) -> list[str]:
        self._links += 1
        if self._links > _MAX_SYMLINKS:
            raise ToolError(f"path {self._shown} cannot be resolved: too many levels of symbolic links")
        if not os.path.isabs(target):
            return list(PurePath(target).parts)
        inside = PurePath(target)
        if not inside.is_relative_to(self._root):
            raise ToolError(f"path {self._shown} leads outside the workspace (through a symlink); refused")
        while len(self._stack) > 1:
            os.close(self._stack.pop())
        return list(inside.relative_to(self._root).parts)


@contextmanager
def _open_in_workspace(root: Path, path: str, kind: str) -> Iterator[int]:
    """An open descriptor of ``path`` inside ``root``, checked and opened as one act where possible;
    ``kind`` ("file" or "folder") is what a missing path is called."""
    pure = _check_path_text(path)
    shown = _shown(path)
    try:
        if _WALK_SUPPORTED:
            walk = _Walk(root, shown)
            try:
                fd = walk.open(list(pure.parts))
            finally:
                walk.close()
        else:  # no dir_fd: check, then open the resolved path (the race this leaves is documented above)
            fd = os.open(resolve_in_workspace(root, path), _OPEN_FLAGS)
    except OSError as error:
        raise ToolError(_open_failure(shown, error, kind)) from None
    # PurePath drops a trailing "/" (and "/."); POSIX open() does not: "notes.md/" names a folder.
    if _names_a_folder(path) and not stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(_open_failure(shown, OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)), kind))
    try:
        yield fd
    finally:
        os.close(fd)


def _names_a_folder(path: str) -> bool:
    """Whether ``path`` ends the way only a folder's name can: ``/``, ``/.`` or ``.`` alone."""
    separators = "/" + (os.sep if os.sep != "/" else "") + (os.altsep or "")
    stripped = path.rstrip(separators)
    return stripped != path or stripped == "." or stripped.endswith(tuple(f"{sep}." for sep in separators))


def _open_failure(shown: str, error: OSError, kind: str) -> str:
    if error.errno == errno.ENOENT:
        return f"no such {kind}: {shown}"
    if error.errno == errno.ENOTDIR:
        return f"path {shown} goes through a file as if it were a folder"
    if error.errno == errno.ELOOP:
        return f"path {shown} cannot be resolved: too many levels of symbolic links"
    return f"cannot open {shown}: {_reason(error)}"


# --------------------------------------------------------------------------- the tools


def _check_workspace(workspace: str | os.PathLike[str]) -> Path:
    root = Path(workspace).resolve()
    if not root.is_dir():
        raise ValueError(f"workspace must be an existing folder: {os.fspath(workspace)!r}")
    return root


def _read_text(fd: int, shown: str) -> str:
    """The UTF-8 text of an open regular file, capped at ``MAX_READ_CHARS`` with a note saying so."""
    size = os.fstat(fd).st_size
    try:
        # newline="" shows the file's line endings as they are; read at most one char past the cap.
        with open(os.dup(fd), encoding="utf-8", newline="") as handle:
            text = handle.read(MAX_READ_CHARS + 1)
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not UTF-8 text") from None
    except OSError as error:
        raise ToolError(f"cannot read {shown}: {_reason(error)}") from None
    if len(text) > MAX_READ_CHARS:
        return (
            text[:MAX_READ_CHARS]
            + f"\n[truncated: showing the first {MAX_READ_CHARS} characters of a {size}-byte file]"
        )
    return text


def read_file_tool(workspace: str | os.PathLike[str]) -> Tool:
    """``read_file(path)``: the UTF-8 text of one file in the workspace, capped at ``MAX_READ_CHARS``."""
    root = _check_workspace(workspace)

    def read_file(arguments: Mapping[str, Any]) -> str:
        path = _validate_arguments(ReadFileArguments, "read_file", arguments).path
        shown = _shown(path)
        with _open_in_workspace(root, path, "file") as fd:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise ToolError(f"{shown} is a folder, not a file; use list_files to see what it holds")
            if not stat.S_ISREG(mode):
                raise ToolError(f"{shown} is not a regular file")
            return _read_text(fd, shown)

    spec = ToolSpec(
        name="read_file",
        description=f"Read a UTF-8 text file inside the workspace (at most {MAX_READ_CHARS} characters are returned).",
        input_schema=_input_schema(ReadFileArguments),
    )
    return Tool(spec=spec, run=read_file)


_LOOKS_MARKED = ("@", "/")
"""What a listing line ends with to mark a symlink or a folder, so a plain name may not end with it."""


def _shown_name(name: str) -> str:
    """A name as listed: as it is, or as a quoted literal when it could be read as something else.

    Quoted: a name that is not plain printable text (a newline, a control character, bytes
    that are not UTF-8), that ends with a mark (``x@`` is a file, not the symlink ``x``), or
    that starts with a quote (it could pose as a quoted literal). So a line that starts
    with a quote is always a literal, and a mark at the end of a line is always a mark.
    """
    if name.isprintable() and not name.endswith(_LOOKS_MARKED) and not name.startswith(("'", '"')):
        return name
    return repr(name)


def _entry_line(entry: os.DirEntry[str]) -> str:
    """One listing line: the name (see ``_shown_name``), then "/" for a folder or "@" for a symlink."""
    name = _shown_name(entry.name)
    # follow_symlinks=False: listing must not touch what a link points to (it may be outside).
    if entry.is_symlink():
        return name + "@"
    return name + ("/" if entry.is_dir(follow_symlinks=False) else "")


def _list_entries(folder: int | Path, shown: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return sorted(_entry_line(entry) for entry in entries)
    except OSError as error:
        raise ToolError(f"cannot list {shown}: {_reason(error)}") from None


def _list_folder(root: Path, path: str, shown: str) -> list[str]:
    if not _WALK_SUPPORTED:  # no dir_fd (Windows): check, then list the resolved folder
        target = resolve_in_workspace(root, path)
        if not target.exists():
            raise ToolError(f"no such folder: {shown}")
        if not target.is_dir():
            raise ToolError(f"{shown} is a file, not a folder; use read_file to read it")
        return _list_entries(target, shown)
    with _open_in_workspace(root, path, "folder") as fd:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise ToolError(f"{shown} is a file, not a folder; use read_file to read it")
        return _list_entries(fd, shown)


def list_files_tool(workspace: str | os.PathLike[str]) -> Tool:
    """``list_files(path=".")``: one folder's entries, sorted by name; folders end in "/", symlinks in "@".

    A name that is not plain printable text is shown as a quoted literal (see ``_entry_line``). The
    description sent to the model does not say so: measured prompts for Gemma 3 270M depend on
    its exact words, and such names are rare and explain themselves."""
    root = _check_workspace(workspace)

    def list_files(arguments: Mapping[str, Any]) -> str:
        path = _validate_arguments(ListFilesArguments, "list_files", arguments).path
        shown = _shown(path)
        names = _list_folder(root, path, shown)
        if not names:
            return "(empty folder)"
        shown_names = names[:MAX_LIST_ENTRIES]
        if len(names) > MAX_LIST_ENTRIES:
            shown_names.append(f"[truncated: showing {MAX_LIST_ENTRIES} of {len(names)} entries]")
        return "\n".join(shown_names)

    spec = ToolSpec(
        name="list_files",
        description=(
            "List the entries of a folder inside the workspace, sorted by name. "
            "Folders end with '/', symbolic links with '@'."
        ),
        input_schema=_input_schema(ListFilesArguments),
    )
    return Tool(spec=spec, run=list_files)


def workspace_tools(workspace: str | os.PathLike[str]) -> tuple[Tool, ...]:
    """Both demo tools for one workspace, in a stable order."""
    return (read_file_tool(workspace), list_files_tool(workspace))
