"""Command line: ``python -m codeagent_lite check [TEXT | --file PATH | -]``, ``... run TASK``, ``... verify DIR``.

Exit status 0: a valid action (a final answer; every check passed); 1: rejected (none; a check failed); 2: the
command could not do what it was asked (wrong use, unreadable input, output closed early as by ``head``). What is
read is untrusted (size-capped, strict UTF-8, a pipe waits a bounded time), what is printed goes through
``display.printable``, and the real providers are imported only when asked for, so no optional extra is needed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import select
import stat
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TextIO

from .agent.loop import DEFAULT_SYSTEM_PROMPT, run_agent
from .agent.workspace_tools import WorkspaceError, workspace_tools
from .diagnosis import diagnose
from .display import error_reason, json_kind, printable
from .json_text_adapter import JsonTextModelAdapter, ProviderError, TextProvider
from .model_adapter import ModelCallBudget
from .scripted_provider import ScriptedProvider

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


def _(message: str, /, **fields: object) -> str:
    # workbook.words._, imported on first use: it needs only the standard library, so no Jupyter loads.
    from .workbook.words import _ as in_language

    return in_language(message, None, **fields)


def _p(context: str, message: str, /) -> str:
    return message  # marks an id with its context for ``make catalog`` (workbook.words._p), untranslated


ARGPARSE_WORDS = (
    _p("argparse", "usage: "),
    _p("argparse", "positional arguments"),
    _p("argparse", "options"),
    _p("argparse", "show this help message and exit"),
    _p("argparse", "%(prog)s: error: %(message)s\n"),
    _p("argparse", "argument %(argument_name)s: %(message)s"),
    _p("argparse", "the following arguments are required: %s"),
    _p("argparse", "one of the arguments %s is required"),
    _p("argparse", "unrecognized arguments: %s"),
    _p("argparse", "not allowed with argument %s"),
    _p("argparse", "ignored explicit argument %r"),
    _p("argparse", "expected one argument"),
    _p("argparse", "expected at most one argument"),
    _p("argparse", "expected at least one argument"),
    _p("argparse", "ambiguous option: %(option)s could match %(matches)s"),
    _p("argparse", "invalid %(type)s value: %(value)r"),
    _p("argparse", "invalid choice: %(value)r (choose from %(choices)s)"),
)
"""argparse's words (as Python 3.11-3.13 spell them), under their own context: "usage: " is also a token label."""


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """argparse asks ``gettext`` in the process locale; while the parser reads it asks the workbook's catalog."""
    from .workbook.language import edition_language
    from .workbook.words import catalog

    saved = argparse._  # type: ignore[attr-defined]
    argparse._ = functools.partial(catalog(edition_language()).pgettext, "argparse")  # type: ignore[attr-defined]
    try:
        return _build_parser().parse_args(argv)
    finally:
        argparse._ = saved  # type: ignore[attr-defined]


EXIT_VALID = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2

MAX_INPUT_BYTES = 1_000_000
"""Most bytes read as model text or as a script; a model reply is kilobytes, ``yes`` is endless."""

FILE_WAIT_SECONDS = 30.0
"""How long ``--file`` waits for a pipe or a device to deliver its text (a regular file never waits)."""


class UsageError(Exception):
    """The command cannot do what it was asked; the message says why (exit status 2)."""


@dataclass(eq=False)
class _OutputFailed(Exception):
    """Only a failed write of the output says "cannot write the output", not any other ``OSError`` near it."""

    cause: OSError


def _write(text: str, out: SupportsWrite[str]) -> None:
    """Escaped and flushed at once, so a write error surfaces here, not at exit in a traceback."""
    try:
        out.write(printable(text))
        getattr(out, "flush", lambda: None)()
    except OSError as error:
        raise _OutputFailed(error) from None


class _PrintableArgumentParser(argparse.ArgumentParser):
    """argparse prints what it refuses verbatim and drops its write errors (``--help > /dev/full`` exits 0)."""

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        target = file if file is not None else sys.stderr
        if message and target is not None:
            _write(message, target)


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(_("expected a whole number, found {found}", found=repr(text))) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(
                _("expected a number >= {minimum}, found {found}", minimum=minimum, found=value)
            )
        return value

    return convert


def _build_parser() -> argparse.ArgumentParser:
    parser = _PrintableArgumentParser(
        prog="python -m codeagent_lite",
        description=_("Tools from the codeagent-lite workbook (JSON text model section)."),
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = commands.add_parser(
        "check",
        help=_("run raw model text through the four validation layers"),
        description=_("Show which validation layers raw model text passes, and the action it becomes."),
    )
    source = check.add_mutually_exclusive_group()
    source.add_argument("text", nargs="?", help=_("the raw model text; '-' or nothing reads standard input"))
    source.add_argument("--file", "-f", metavar="PATH", help=_("read the raw model text from a UTF-8 file"))
    _add_run_command(commands)
    verify = commands.add_parser(
        "verify",
        help=_("judge your own json_text_messages.py, json_text_adapter.py and json_action_parser.py"),
        description=_(
            "Run the workbook's contract checks on a folder holding your three files: step 1 message encoding, "
            "2 the adapter's flow, 3 the blog's four checks, 4 strict JSON. Exit 0 when every check passes."
        ),
    )
    verify.add_argument("directory", metavar="DIR", help=_("the folder with your files, e.g. notebooks/my_json_text"))
    verify.add_argument("--step", type=_int_at_least(1), metavar="N", help=_("run steps 1 to N only (1-4)"))
    verify.add_argument(
        "--time-limit", type=float, default=5.0, metavar="SECONDS", help=_("per check, before it counts as hung (5)")
    )
    verify.add_argument(
        "--seed", type=int, metavar="N", help=_("draw the checks' inputs from N instead of the public cases (grading)")
    )
    return parser


def _add_run_command(commands: argparse._SubParsersAction[_PrintableArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help=_("run the agent loop on a task with a model and the two workspace tools"),
        description=_(
            "Run the agent loop: the model answers in JSON text, read_file and list_files act inside "
            "the workspace, and every step is printed with its layer verdicts and token usage."
        ),
    )
    run.add_argument("task", help=_("what the agent should do"))
    run.add_argument("--provider", required=True, choices=("local", "openai", "scripted"), help=_("which model to ask"))
    run.add_argument(
        "--mode",
        choices=("free_text", "schema"),
        help=_("local model only: free text (default) or replies constrained by the action JSON Schema"),
    )
    run.add_argument("--base-url", metavar="URL", help=_("openai only: the server, e.g. https://api.deepseek.com/v1"))
    run.add_argument("--model", metavar="NAME", help=_("openai only: the model name the server knows"))
    key = run.add_mutually_exclusive_group()
    key.add_argument(
        "--api-key-env",
        metavar="VAR",
        help=_("openai only: the environment variable holding the API key (default OPENAI_API_KEY)"),
    )
    key.add_argument(
        "--no-api-key",
        action="store_const",
        const=True,
        help=_("openai only: the server needs no key (Ollama, llama.cpp's server)"),
    )
    run.add_argument(
        "--script", metavar="FILE", help=_("scripted only: replies to replay, a JSON array or one raw reply per line")
    )
    run.add_argument("--workspace", default=".", metavar="DIR", help=_("the folder the tools may read (default: .)"))
    for flag, minimum, default, help_text in (
        ("--max-steps", 1, 8, _("most model calls (default 8)")),
        ("--max-rejections", 0, 2, _("most corrections sent in a row before giving up (default 2)")),
        ("--max-output-tokens", 1, 256, _("per model call (default 256)")),
    ):
        run.add_argument(flag, type=_int_at_least(minimum), default=default, metavar="N", help=help_text)


def parse_script(text: str) -> tuple[str, ...]:
    """Scripted replies from a file's text: a JSON array (a string is a reply verbatim, an object is sent as
    compact JSON, so broken replies and valid actions are both easy to write), or else one raw reply per line."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise UsageError(_("the script nests too deeply to be read as a JSON array of replies")) from None
    except ValueError:
        value = None
    if isinstance(value, list):
        replies = [_script_reply(number, item) for number, item in enumerate(value, start=1)]
    else:
        # Lines end at "\n" alone: str.splitlines() also breaks at U+2028, \x85 or \f, which a JSON string may hold.
        replies = [line.removesuffix("\r") for line in text.split("\n") if line.strip()]
    if not replies:
        raise UsageError(_("the script holds no replies"))
    return tuple(replies)


def _script_reply(number: int, item: object) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        try:
            return json.dumps(item, ensure_ascii=False)
        except RecursionError:
            raise UsageError(_("script item {number} nests too deeply to be sent as a reply", number=number)) from None
    raise UsageError(
        _("script item {number} must be a string or an object, found {found}", number=number, found=json_kind(item))
    )


# --------------------------------------------------------------------------- reading untrusted input


def _decoded(data: bytes, source: str) -> str:
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(
            _(
                "{source} is longer than {limit} bytes; model text is never that long",
                source=source,
                limit=MAX_INPUT_BYTES,
            )
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            _(
                "{source} is not valid UTF-8: byte {position} is {byte}, which cannot start or continue a character "
                "there",
                source=source,
                position=error.start + 1,
                byte=format(data[error.start], "#04x"),
            )
        ) from None


def _argument(text: str, source: str) -> str:
    """Decoded strictly like a file: Python hands over argv bytes that are not UTF-8 as lone surrogates."""
    try:
        return _decoded(text.encode("utf-8", "surrogateescape"), source)
    except UnicodeEncodeError:
        raise UsageError(_("{source} holds a lone surrogate, which is not text", source=source)) from None


def _cannot_read(source: str, error: BaseException) -> UsageError:
    return UsageError(_("cannot read {source}: {reason}", source=source, reason=error_reason(error)))


def _read_descriptor(fd: int, mode: int, source: str) -> str:
    """Up to ``MAX_INPUT_BYTES`` + 1 bytes from ``fd``, decoded. A pipe, FIFO or socket waits a bounded time; a file
    has an end, and a terminal is a person typing."""
    waits = not stat.S_ISREG(mode) and not os.isatty(fd) and os.name == "posix"
    deadline = time.monotonic() + FILE_WAIT_SECONDS if waits else None
    chunks: list[bytes] = []
    received = 0
    while received <= MAX_INPUT_BYTES:
        if deadline is not None and not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            seconds = format(FILE_WAIT_SECONDS, "g")
            raise UsageError(_("{source} delivered no end of text within {seconds} s", source=source, seconds=seconds))
        try:
            chunk = os.read(fd, 65_536)
        except BlockingIOError:  # a non-blocking descriptor with nothing yet: wait for it (the deadline is above)
            select.select([fd], [], [], None if deadline is None else max(0.0, deadline - time.monotonic()))
            continue
        if not chunk:
            break
        chunks.append(chunk)
        received += len(chunk)
    return _decoded(b"".join(chunks), source)


def _read_file(path: str, source: str) -> str:
    try:
        # O_NONBLOCK: opening a FIFO that has no writer must not block; reads then wait with a deadline.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise UsageError(_("{source} is a folder, not a file", source=source))
            return _read_descriptor(fd, mode, source)
        finally:
            os.close(fd)
    except OSError as error:
        raise _cannot_read(source, error) from None


def _read_stream(stream: TextIO | None) -> str:
    source = _("the model text from standard input")
    if stream is None:
        raise UsageError(_("standard input is closed; give the text as an argument or with --file PATH"))
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):  # a text stream handed to main() (tests, notebooks), or closed
        fd = -1
    try:
        if fd >= 0 and os.name == "posix":  # as --file reads: bounded, and a non-blocking pipe is waited on
            return _read_descriptor(fd, mode, source)
        data = (getattr(stream, "buffer", None) or stream).read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError) as error:  # ValueError: reading a closed file object
        raise _cannot_read(source, error) from None
    return _decoded(data, source) if isinstance(data, bytes) else _argument(data, source)


# --------------------------------------------------------------------------- the commands

_OPENAI_ONLY = ("base_url", "model", "api_key_env", "no_api_key")
_ONLY_FOR = {"script": "scripted", "mode": "local", **dict.fromkeys(_OPENAI_ONLY, "openai")}
"""The options that belong to one provider, by attribute (``--base-url`` is ``base_url``)."""


def _check_provider_options(args: argparse.Namespace) -> None:
    for attribute, provider in _ONLY_FOR.items():
        if getattr(args, attribute) is not None and args.provider != provider:
            flag = "--" + attribute.replace("_", "-")
            raise UsageError(_("{flag} only applies to --provider {provider}", flag=flag, provider=provider))
    for attribute in ("model", "base_url", "api_key_env"):
        if getattr(args, attribute) is not None:
            setattr(args, attribute, _argument(getattr(args, attribute), "--" + attribute.replace("_", "-")))


def _scripted_provider(args: argparse.Namespace) -> tuple[TextProvider, str]:
    if args.script is None:
        raise UsageError(_("--provider scripted needs --script FILE"))
    replies = parse_script(_read_file(args.script, _("the script")))
    return ScriptedProvider(replies), _("scripted ({count} replies)", count=len(replies))


def _local_provider(args: argparse.Namespace) -> tuple[TextProvider, str]:
    # Imported only here: not needed by check or scripted runs.
    from .providers.local_engine import engine_status
    from .workbook.engine_words import engine_report_line

    status = engine_status()
    if not status.ready:  # without llama-cpp-python: where its build stands and how to get it
        raise UsageError(engine_report_line(status))
    from .providers.local_server import local_model_server

    mode: Literal["free_text", "schema"] = "schema" if args.mode == "schema" else "free_text"
    server = local_model_server()  # the model runs in a process of its own: a crash there is a ProviderError here
    return server.provider(mode), _("local Gemma 3 270M ({mode}; {note})", mode=mode, note=server.note)


def _openai_provider(args: argparse.Namespace) -> tuple[TextProvider, str]:
    if args.base_url is None or args.model is None:
        raise UsageError(_("--provider openai needs --base-url URL and --model NAME"))
    from .providers.openai_compatible import OpenAICompatibleProvider

    key_env: str | None = None if args.no_api_key else (args.api_key_env or "OPENAI_API_KEY")
    provider = OpenAICompatibleProvider(args.base_url, args.model, api_key_env=key_env)
    key_note = _("no API key") if key_env is None else _("API key from ${variable}", variable=key_env)
    return provider, _(
        "openai-compatible ({model} at {url}, {key})", model=args.model, url=provider.shown_url, key=key_note
    )


_PROVIDERS: dict[str, Callable[[argparse.Namespace], tuple[TextProvider, str]]] = {
    "scripted": _scripted_provider,
    "local": _local_provider,
    "openai": _openai_provider,
}


def _run(args: argparse.Namespace, _stdin: TextIO | None, out: TextIO) -> int:
    try:
        tools = workspace_tools(args.workspace)
    except WorkspaceError as error:
        raise UsageError(_("--workspace must be an existing folder: {found}", found=error.found)) from None
    task = _argument(args.task, _("the task"))
    if not task.strip():
        raise UsageError(_("the task must not be blank"))
    _check_provider_options(args)
    try:
        provider, description = _PROVIDERS[args.provider](args)
    except (ProviderError, ValueError, TypeError) as error:  # an unset key variable, a missing extra
        from .workbook.provider_words import provider_error_text

        raise UsageError(_("cannot set up the provider: {error}", error=provider_error_text(error))) from None
    _write(_("provider: {description}", description=description) + "\n", out)
    # The base model gets no agent-role system message: its prompt is worked examples, and
    # measured on 4 demo tasks an extra "Note:" line cut its final answers from 3 of 4 to 1 of 4.
    transcript = run_agent(
        JsonTextModelAdapter(provider),
        tools,
        task,
        system_prompt=None if args.provider == "local" else DEFAULT_SYSTEM_PROMPT,
        max_steps=args.max_steps,
        max_consecutive_rejections=args.max_rejections,
        budget=ModelCallBudget(args.max_output_tokens),
    )
    from .workbook.transcript_view import render_transcript

    # A hostile server can echo the key it was sent inside a reply, and run prints the replies: a provider that
    # holds secrets offers ``scrub`` (asking for the method keeps the offline run from importing the real ones).
    shown = render_transcript(transcript)
    scrub = getattr(provider, "scrub", None)
    _write((str(scrub(shown)) if callable(scrub) else shown) + "\n", out)
    return EXIT_VALID if transcript.final_answer is not None else EXIT_REJECTED


def _check(args: argparse.Namespace, stdin: TextIO | None, out: TextIO) -> int:
    # workbook.ladder imports only the chapter, so the edition's language costs check no Jupyter.
    from .workbook.ladder import format_ladder

    if args.file is not None:
        text = _read_file(args.file, _("the model text from --file"))
    elif args.text is None or args.text == "-":
        text = _read_stream(stdin)
    else:
        text = _argument(str(args.text), _("the text argument"))
    diagnosis = diagnose(text)
    _write(format_ladder(diagnosis) + "\n", out)
    return EXIT_VALID if diagnosis.accepted else EXIT_REJECTED


def _verify(args: argparse.Namespace, _stdin: TextIO | None, out: TextIO) -> int:
    from .workbook.verify import VerifyUsageError, verify  # the workbook room is not needed by run

    try:
        report = verify(args.directory, args.step, time_limit=args.time_limit, seed=args.seed)
    except VerifyUsageError as error:
        raise UsageError(str(error)) from None
    _write(f"{report}\n", out)
    return report.exit_code


_COMMANDS = {"check": _check, "run": _run, "verify": _verify}


# --------------------------------------------------------------------------- entry points


def _say_error(message: str) -> None:
    if sys.stderr is not None:
        with contextlib.suppress(_OutputFailed):  # standard error is full or closed too: the exit status still tells
            _write(_("error: {message}", message=message) + "\n", sys.stderr)


def _report_write_error(error: OSError, stream: TextIO) -> int:
    """One line on standard error (none when the reader simply left, as ``head`` does), then exit status 2; the
    real standard output goes to devnull, or what Python still holds for it would fail again at exit."""
    if not isinstance(error, BrokenPipeError):
        said = _("cannot write the output: {reason}", reason=error_reason(error))
        _say_error(said + (_(" (errno {number})", number=error.errno) if error.errno else ""))
    if stream is sys.stdout:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    target = stdout if stdout is not None else sys.stdout
    for stream in (target, sys.stderr):
        # A console whose encoding lacks ✔ or Chinese (a Windows code page, a latin-1 locale) gets backslash
        # escapes instead of a UnicodeEncodeError halfway through the output.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    if target is None:  # started with standard output closed: nowhere to say anything
        return EXIT_USAGE
    try:
        return _dispatch(argv, stdin if stdin is not None else sys.stdin, target)
    except _OutputFailed as failure:
        return _report_write_error(failure.cause, target)


def _dispatch(argv: Sequence[str] | None, stdin: TextIO | None, out: TextIO) -> int:
    try:
        args = _parse(argv)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else EXIT_VALID
    try:
        return _COMMANDS[args.command](args, stdin, out)
    except UsageError as error:
        _say_error(str(error))
        return EXIT_USAGE


def main_entry() -> None:
    """Console-script entry point (``codeagent-lite check ...``); every write was flushed, so nothing fails at exit."""
    sys.exit(main())
