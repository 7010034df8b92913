"""The child process of ``verify``: loads a learner's files and runs contract checks on them.

Learner code is untrusted input. It may loop forever, print, read from the keyboard, call
``sys.exit`` or kill its own process. So it runs here, in a process the parent can kill,
and this side makes sure that whatever it does comes back as one line of JSON per event:

* ``{"event": "start", "key": K}`` before anything of the learner's runs (the parent starts
  its clock), then ``{"event": "done", "key": K, ...}`` with the verdict;
* ``K`` is ``load:<file>`` for importing a file, or a check id such as ``"3.7"``.

The events travel over a ``multiprocessing`` pipe; ``print`` in learner code goes into a
buffer (reported as a note), writes to file descriptors 1 and 2 go to ``os.devnull``, and
``input()`` meets an empty standard input instead of waiting.

``verify`` starts ``run_job`` with ``{"directory": ..., "label": ..., "ids": [...], "texts": [...],
"language": ...}`` (the ids of checks and samples to run; ``texts`` are replies for
``contract.text_samples``; the edition's language, for the sentences sent back) through
multiprocessing's fork server where there is one (Linux, macOS): the server has imported this
module once, so each run costs a fork instead of importing pydantic again.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import io
import json
import keyword
import os
import sys
import traceback
import types
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .contract import CHECKS, SAMPLES, Check, Mismatch, Sample, text_samples
from .language import ENV_VAR
from .verify_messages import MESSAGES

say = MESSAGES.say

__all__ = ["clean", "describe_exception", "load_package", "run_job"]

_MAX_CHARS = 400
_MAX_PRINTED = 80


def clean(text: str, *, directory: Path | None = None, label: str = "", limit: int = _MAX_CHARS) -> str:
    """One safe line: no machine paths, no control characters, no unbounded length."""
    if directory is not None:
        text = text.replace(str(directory), label or directory.name)
    out = []
    for char in text:
        if char.isprintable() or char == " ":
            out.append(char)
        elif char == "\n":
            out.append("\\n")
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    line = "".join(out)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _learner_place(error: BaseException, directory: Path) -> str:
    """`` in json_action_parser.py line 12`` for the innermost frame in the learner's folder."""
    place = ""
    for frame in traceback.extract_tb(error.__traceback__):
        try:
            path = Path(frame.filename).resolve()
        except (OSError, ValueError):
            continue
        if path.parent == directory:
            place = say("place", file=path.name, line=frame.lineno)
    return place


def describe_exception(error: BaseException, directory: Path) -> str:
    """What a learner should read when their code raised instead of returning."""
    place = _learner_place(error, directory)
    if isinstance(error, SyntaxError) and error.filename:
        return say("syntax_error", file=Path(error.filename).name, line=error.lineno, message=error.msg)
    if isinstance(error, NotImplementedError):
        return say("not_written", place=place)
    if isinstance(error, SystemExit):
        return say("system_exit", code=repr(error.code), place=place)
    if isinstance(error, RecursionError):
        return say("recursion", place=place)
    name = type(error).__name__
    module = type(error).__module__
    if name == "InvalidModelOutputError" and module != "codeagent_lite.model_adapter":
        return say("own_error", module=module)
    return f"{name}: {error}{place}" if str(error) else f"{name}{place}"


def load_package(directory: Path) -> str:
    """Register ``directory`` as a package without running its ``__init__``; return its name.

    Each file is then imported on its own, so a broken or unfinished file does not hide
    the results of the others. The folder's own name is used when that is safe (so a
    learner's absolute self-imports work); otherwise an alias that shadows nothing.
    """
    name = directory.name
    if _already_imported(name, directory):
        return name  # e.g. the package's own folder: already imported, use it as it is
    if not _name_is_free(name):
        name = _alias(name)
    _register_package(name, directory)
    return name


def _already_imported(name: str, directory: Path) -> bool:
    """A package of this name is imported from this very folder: importing it again would make two copies."""
    existing = sys.modules.get(name)
    if existing is None:
        return False
    return any(Path(path).resolve() == directory for path in getattr(existing, "__path__", []))


def _name_is_free(name: str) -> bool:
    """The folder's name may name the package only if that hides no other module (``json``, an installed one).

    The cheap tests come first; ``find_spec`` searches ``sys.path``, so it runs last.
    """
    return (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and sys.modules.get(name) is None
        and name not in sys.stdlib_module_names
        and importlib.util.find_spec(name) is None
    )


def _alias(folder_name: str) -> str:
    """A name no real module has, still recognisable as the learner's folder in a traceback."""
    return "_verified_" + "".join(char if char.isalnum() else "_" for char in folder_name)


def _register_package(name: str, directory: Path) -> None:
    """An empty package whose search path is the folder: ``import name.file`` then finds the learner's files."""
    package = types.ModuleType(name, f"the learner's folder {directory.name}")
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(directory)]
    package.__spec__ = spec
    package.__path__ = [str(directory)]
    package.__package__ = name
    sys.modules[name] = package


class _Runner:
    def __init__(self, directory: Path, label: str, protocol: Connection) -> None:
        self.directory = directory
        self.label = label
        self.protocol = protocol
        self.package = load_package(directory)
        self.modules: dict[str, types.ModuleType] = {}
        self.problems: dict[str, str] = {}

    def send(self, **event: Any) -> None:
        self.protocol.send_bytes(json.dumps(event, ensure_ascii=True).encode("ascii"))

    def _clean(self, text: str, limit: int = _MAX_CHARS) -> str:
        return clean(text, directory=self.directory, label=self.label, limit=limit)

    def _printed_note(self, buffer: io.StringIO, file: str) -> str:
        printed = buffer.getvalue()
        if not printed.strip():
            return ""
        return say("printed", file=file, printed=self._clean(repr(printed.strip()), _MAX_PRINTED))

    def load(self, file: str) -> None:
        key = f"load:{file}"
        if not (self.directory / f"{file}.py").is_file():
            self.problems[file] = say("missing", file=file, label=self.label)
            self.send(event="done", key=key, passed=False, got=self.problems[file], printed="")
            return
        self.send(event="start", key=key)
        buffer = io.StringIO()
        try:
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                self.modules[file] = importlib.import_module(f"{self.package}.{file}")
        except BaseException as error:  # learner code: anything may come out, even SystemExit
            what = self._clean(describe_exception(error, self.directory))
            self.problems[file] = say("could_not_load", file=file, what=what)
        self.send(
            event="done",
            key=key,
            passed=file not in self.problems,
            got=self.problems.get(file, ""),
            printed=self._printed_note(buffer, file),
        )

    def run(self, check: Check | Sample) -> None:
        if check.file not in self.modules and check.file not in self.problems:
            self.load(check.file)
        module = self.modules.get(check.file)
        if module is None:
            self.send(event="done", key=check.id, passed=False, not_run=True, got="", printed="")
            return
        self.send(event="start", key=check.id)
        buffer = io.StringIO()
        got = expected = None
        shown = ""
        try:
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                shown = check.run(module) or ""
        except Mismatch as mismatch:
            got, expected = mismatch.got, mismatch.expected
        except BaseException as error:  # learner code: anything may come out, even SystemExit
            described = describe_exception(error, self.directory)
            got = described if isinstance(error, NotImplementedError) else say("it_raised", described=described)
        self.send(
            event="done",
            key=check.id,
            passed=got is None,
            got=self._clean(got or ""),
            expected=None if expected is None else self._clean(expected),
            printed=self._printed_note(buffer, check.file),
            shown=self._clean(shown),
        )


_MEMORY_LIMIT = 4 << 30  # bytes of address space: far above what any check needs, far below a runaway loop's


def _limit_memory() -> None:
    """A learner's ``[0] * 10**10`` becomes a MemoryError in this process, not a machine out of memory."""
    try:
        import resource  # not on Windows
    except ImportError:
        return
    try:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = _MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(_MEMORY_LIMIT, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        pass  # a platform that refuses address-space limits (macOS): the time limit still applies


def run_job(job: dict[str, Any], connection: Connection) -> None:
    """The child's entry point: run ``job``'s checks, one JSON event per message on ``connection``."""
    os.environ[ENV_VAR] = str(job.get("language", "en"))  # the edition's language, as the parent read it
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # writes to fd 1 (os.write, C code) go nowhere instead of someone's terminal
    os.dup2(devnull, 2)
    sys.stdin = io.StringIO("")  # input() in learner code ends with EOFError instead of waiting
    _limit_memory()
    directory = Path(job["directory"]).resolve()
    wanted = set(job["ids"])
    runner = _Runner(directory, str(job["label"]), connection)
    runner.send(event="ready")
    items: list[Check | Sample] = [*CHECKS, *SAMPLES, *text_samples(job.get("texts", []))]
    for item in items:
        if item.id in wanted:
            runner.run(item)
    runner.send(event="finished")
    connection.close()
    # os._exit: a learner's atexit hook or a stuck non-daemon thread must not keep the process alive.
    os._exit(0)
