"""Two demo tools, ``read_file`` and ``list_files``, confined to one workspace folder.

The agent loop runs whatever tool call a model sends, so a tool must treat its
arguments as untrusted input: a model (or text injected into a file it read) can ask
for ``../../etc/passwd`` just as easily as for ``README.md``. Every path therefore goes
through ``resolve_in_workspace`` before anything is opened, and every refusal is a
``ToolError`` whose short message the loop hands back to the model as an error
``ToolResult``, so the model can change course instead of the loop crashing.

Known limit, acceptable for a read-only demo: the check and the open are two system
calls, so a process that swaps a directory for a symlink in between could still win
the race. The tools open the *resolved* path, which narrows that window; a real agent
would open relative to a directory descriptor with ``O_NOFOLLOW`` on every component.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

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


def _json_type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


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
                problems.append(f"unknown argument {name!r}")
            elif detail["type"] == "missing":
                problems.append(f"missing argument {name!r}")
            elif detail["type"] == "string_type":
                problems.append(f"{name} must be a string, found {_json_type_name(arguments.get(name))}")
            else:
                problems.append(f"{name}: {detail['msg']}")
        raise ToolError(f"{tool_name}: {'; '.join(problems)} ({tool_name} takes: {accepted})") from None


# --------------------------------------------------------------------------- confinement


def resolve_in_workspace(workspace: Path, path: object) -> Path:
    """The real location of ``path`` inside ``workspace``, or ``ToolError`` if it is not inside.

    Cheap, explicit refusals come first so the model gets a precise reason (absolute
    path, ``..``, NUL). The decisive check is the last one: resolve every symlink and
    require the result to lie under the resolved workspace. A symlink inside the
    workspace that points outside is refused there, even though its name looks harmless.
    """
    if not isinstance(path, str):
        raise ToolError(f"path must be a string, found {_json_type_name(path)}")
    if not path.strip():
        raise ToolError("path must not be blank")
    if "\x00" in path:
        raise ToolError("path must not contain a NUL character")
    pure = PurePath(path)
    if pure.is_absolute() or path.startswith(("/", "\\")):
        raise ToolError(f"path {path!r} is absolute; use a path relative to the workspace root")
    if ".." in pure.parts:
        raise ToolError(f"path {path!r} contains '..'; paths must stay inside the workspace")
    root = workspace.resolve()
    try:
        resolved = (root / pure).resolve()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop on Python < 3.13
        raise ToolError(f"path {path!r} cannot be resolved: {error.__class__.__name__}") from None
    if not resolved.is_relative_to(root):
        raise ToolError(f"path {path!r} leads outside the workspace (through a symlink); refused")
    return resolved


# --------------------------------------------------------------------------- the tools


def _check_workspace(workspace: str | os.PathLike[str]) -> Path:
    root = Path(workspace).resolve()
    if not root.is_dir():
        raise ValueError(f"workspace must be an existing folder: {os.fspath(workspace)!r}")
    return root


def read_file_tool(workspace: str | os.PathLike[str]) -> Tool:
    """``read_file(path)``: the UTF-8 text of one file in the workspace, capped at ``MAX_READ_CHARS``."""
    root = _check_workspace(workspace)

    def read_file(arguments: Mapping[str, Any]) -> str:
        path = _validate_arguments(ReadFileArguments, "read_file", arguments).path
        target = resolve_in_workspace(root, path)
        if not target.exists():
            raise ToolError(f"no such file: {path!r}")
        if target.is_dir():
            raise ToolError(f"{path!r} is a folder, not a file; use list_files to see what it holds")
        if not target.is_file():
            raise ToolError(f"{path!r} is not a regular file")
        try:
            # newline="" shows the file's line endings as they are; read at most one char past the cap.
            with open(target, encoding="utf-8", newline="") as handle:
                text = handle.read(MAX_READ_CHARS + 1)
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text") from None
        except OSError as error:
            raise ToolError(f"cannot read {path!r}: {error.strerror or error.__class__.__name__}") from None
        if len(text) > MAX_READ_CHARS:
            size = target.stat().st_size
            return (
                text[:MAX_READ_CHARS]
                + f"\n[truncated: showing the first {MAX_READ_CHARS} characters of a {size}-byte file]"
            )
        return text

    spec = ToolSpec(
        name="read_file",
        description=f"Read a UTF-8 text file inside the workspace (at most {MAX_READ_CHARS} characters are returned).",
        input_schema=_input_schema(ReadFileArguments),
    )
    return Tool(spec=spec, run=read_file)


def list_files_tool(workspace: str | os.PathLike[str]) -> Tool:
    """``list_files(path=".")``: one folder's entries, sorted by name; folders end in "/", symlinks in "@"."""
    root = _check_workspace(workspace)

    def list_files(arguments: Mapping[str, Any]) -> str:
        path = _validate_arguments(ListFilesArguments, "list_files", arguments).path
        target = resolve_in_workspace(root, path)
        if not target.exists():
            raise ToolError(f"no such folder: {path!r}")
        if not target.is_dir():
            raise ToolError(f"{path!r} is a file, not a folder; use read_file to read it")
        try:
            with os.scandir(target) as entries:
                # follow_symlinks=False: listing must not touch what a link points to (it may be outside).
                names = sorted(
                    entry.name + ("@" if entry.is_symlink() else "/" if entry.is_dir(follow_symlinks=False) else "")
                    for entry in entries
                )
        except OSError as error:
            raise ToolError(f"cannot list {path!r}: {error.strerror or error.__class__.__name__}") from None
        if not names:
            return "(empty folder)"
        shown = names[:MAX_LIST_ENTRIES]
        if len(names) > MAX_LIST_ENTRIES:
            shown.append(f"[truncated: showing {MAX_LIST_ENTRIES} of {len(names)} entries]")
        return "\n".join(shown)

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
