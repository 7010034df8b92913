"""Command line: ``python -m codeagent_lite check [TEXT | --file PATH | -]``, ``... run TASK``, ``... verify DIR``.

Exit status follows the usual convention so scripts can use it: 0 the text is a
valid action (``run``: a final answer was reached; ``verify``: every check passes), 1 a
layer rejected it (``run``: the loop stopped without a final answer; ``verify``: a check
failed), 2 the command could not do what it was asked (wrong use, unreadable or over-long
input, or its output was closed early, as by ``head``).

Everything the command reads is untrusted, so it is read one way: at most
``MAX_INPUT_BYTES``, decoded as strict UTF-8 whether it came from an argument, standard
input or ``--file``, and a ``--file`` that is a pipe or a device waits at most
``FILE_WAIT_SECONDS``. Everything it prints goes through ``display.printable``, so no
reply, file name or server answer can send escape sequences to the terminal.

``run`` imports the real providers only when asked for them, so ``check`` and
``run --provider scripted`` work without the optional ``openai`` and ``local`` extras.
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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO, cast

from .agent.loop import DEFAULT_SYSTEM_PROMPT, run_agent
from .agent.workspace_tools import workspace_tools
from .diagnosis import diagnose
from .display import json_kind, printable
from .json_text_adapter import JsonTextModelAdapter, ProviderError, TextProvider
from .model_adapter import ModelCallBudget
from .scripted_provider import ScriptedProvider

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


def _(message: str, /, **fields: object) -> str:
    """``message`` in the learner's language (``workbook.words``, loaded on first use like the rest of the room;
    it imports only the standard library, so ``check`` and ``run`` still load no Jupyter)."""
    from .workbook.words import _ as in_language

    return in_language(message, None, **fields)


def _p(context: str, message: str, /) -> str:
    """Marks an id with its context for ``make catalog`` without translating it (``workbook.words._p``)."""
    return message


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
"""The words argparse asks ``gettext`` for while it reads a command line or prints its help (Python 3.11-3.13
spell them so), under the context ``argparse`` so they never meet the workbook's own ids ("usage: " is also the
label of a token count); ``_argparse_speaks`` hands argparse the catalog that holds their translations."""


@contextlib.contextmanager
def _argparse_speaks() -> Iterator[None]:
    """argparse in the learner's language while the command line is read.

    argparse takes its words from ``gettext.gettext``, whose language is the process locale and whose domain
    is global to the process; the workbook's language follows its own rules (``workbook.language``: CAL_LANG,
    the edition folder, then the locale). So argparse's module-level ``_`` is pointed at the workbook's
    catalog for as long as the parser is built and used, and put back after, whatever happens.
    """
    from .workbook.language import edition_language
    from .workbook.words import catalog

    translations = catalog(edition_language())
    saved = argparse._  # type: ignore[attr-defined]
    argparse._ = functools.partial(translations.pgettext, "argparse")  # type: ignore[attr-defined]
    try:
        yield
    finally:
        argparse._ = saved  # type: ignore[attr-defined]


EXIT_VALID = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2

MAX_INPUT_BYTES = 1_000_000
"""Most bytes read as model text or as a script; a model reply is kilobytes, ``yes`` is endless."""

FILE_WAIT_SECONDS = 30.0
"""How long ``--file`` waits for a pipe or a device to deliver its text (a regular file never waits)."""

_READ_CHUNK = 65_536


class UsageError(Exception):
    """The command cannot do what it was asked; the message says why (exit status 2)."""


class _OutputFailed(Exception):
    """Writing the command's output failed (a full disk, an I/O error, a reader gone)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _GuardedOutput(io.TextIOBase):
    """The command's output stream, whose write errors become ``_OutputFailed``.

    Only a failure to write says "cannot write the output": any other ``OSError`` a
    command meets is its own business, so the two are told apart where the write happens.
    """

    def __init__(self, inner: TextIO) -> None:
        super().__init__()
        self.inner = inner

    def write(self, text: str) -> int:
        try:
            return self.inner.write(text)
        except OSError as error:
            raise _OutputFailed(error) from None

    def flush(self) -> None:
        try:
            self.inner.flush()
        except OSError as error:
            raise _OutputFailed(error) from None


class _PrintableArgumentParser(argparse.ArgumentParser):
    """argparse quotes what it refuses verbatim; this one escapes it first, like everything else printed.

    argparse also drops write errors without a word (``--help > /dev/full`` would exit 0
    having printed nothing); here they end the command like any other write error.
    """

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if not message:
            return
        target = file if file is not None else sys.stderr
        if target is None:
            return
        try:
            target.write(printable(message))
            flush = getattr(target, "flush", None)
            if flush is not None:
                flush()
        except OSError as error:
            raise _OutputFailed(error) from None


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
    _add_verify_command(commands)
    return parser


def _int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for whole numbers >= ``minimum``, with a message that says what came instead."""

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


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)


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
        "--script",
        metavar="FILE",
        help=_("scripted only: replies to replay, a JSON array or one raw reply per line"),
    )
    run.add_argument("--workspace", default=".", metavar="DIR", help=_("the folder the tools may read (default: .)"))
    run.add_argument("--max-steps", type=_positive_int, default=8, metavar="N", help=_("most model calls (default 8)"))
    run.add_argument(
        "--max-rejections",
        type=_non_negative_int,
        default=2,
        metavar="N",
        help=_("most corrections sent in a row before giving up (default 2)"),
    )
    run.add_argument(
        "--max-output-tokens", type=_positive_int, default=256, metavar="N", help=_("per model call (default 256)")
    )


def _add_verify_command(commands: argparse._SubParsersAction[_PrintableArgumentParser]) -> None:
    verify = commands.add_parser(
        "verify",
        help=_("judge your own json_text_messages.py, json_text_adapter.py and json_action_parser.py"),
        description=_(
            "Run the workbook's contract checks on a folder holding your three files: step 1 message encoding, "
            "2 the adapter's flow, 3 the blog's four checks, 4 strict JSON. Exit 0 when every check passes."
        ),
    )
    verify.add_argument("directory", metavar="DIR", help=_("the folder with your files, e.g. notebooks/my_json_text"))
    verify.add_argument("--step", type=_positive_int, metavar="N", help=_("run steps 1 to N only (1-4)"))
    verify.add_argument(
        "--time-limit", type=float, default=5.0, metavar="SECONDS", help=_("per check, before it counts as hung (5)")
    )
    verify.add_argument(
        "--seed", type=int, metavar="N", help=_("draw the checks' inputs from N instead of the public cases (grading)")
    )


def _verify(args: argparse.Namespace, out: TextIO) -> int:
    # Imported only here: the workbook room is not needed by run.
    from .workbook.verify import VerifyUsageError, verify

    try:
        report = verify(args.directory, args.step, time_limit=args.time_limit, seed=args.seed)
    except VerifyUsageError as error:
        _say_error(str(error))
        return EXIT_USAGE
    print(printable(str(report)), file=out)
    return report.exit_code


def parse_script(text: str) -> tuple[str, ...]:
    """Scripted replies from a file's text: a JSON array, or else one raw reply per non-blank line.

    In an array, a string is the reply text verbatim and an object is written as
    compact JSON, so a teacher can script valid actions as objects and broken replies
    as strings. In the line form each line is sent exactly as written (it is not parsed
    here: checking it is the agent loop's job).
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise UsageError(_("the script nests too deeply to be read as a JSON array of replies")) from None
    except ValueError:
        value = None
    if isinstance(value, list):
        replies = [_script_reply(number, item) for number, item in enumerate(value, start=1)]
    else:
        replies = [line for line in text.splitlines() if line.strip()]
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


def _strict_text(data: bytes, source: str) -> str:
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


def _strict_argument(text: str, source: str) -> str:
    """An argument decoded the same strict way as a file.

    Python hands over argv bytes that are not UTF-8 as lone surrogates (surrogateescape);
    turning them back into bytes and decoding strictly refuses them as a file would be.
    """
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise UsageError(_("{source} holds a lone surrogate, which is not text", source=source)) from None
    return _strict_text(data, source)


def _bounded(data: bytes, source: str) -> bytes:
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(
            _(
                "{source} is longer than {limit} bytes; model text is never that long",
                source=source,
                limit=MAX_INPUT_BYTES,
            )
        )
    return data


def _read_descriptor(fd: int, source: str, deadline: float | None) -> bytes:
    """Up to ``MAX_INPUT_BYTES`` + 1 bytes from ``fd``; with a deadline, never waiting past it."""
    chunks: list[bytes] = []
    received = 0
    while received <= MAX_INPUT_BYTES:
        if deadline is not None and not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise UsageError(
                _(
                    "{source} delivered no end of text within {seconds} s",
                    source=source,
                    seconds=format(FILE_WAIT_SECONDS, "g"),
                )
            )
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            break
        chunks.append(chunk)
        received += len(chunk)
    return _bounded(b"".join(chunks), source)


def _read_file(path: str, source: str) -> str:
    try:
        # O_NONBLOCK: opening a FIFO that has no writer must not block; reads then wait with a deadline.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise UsageError(
            _("cannot read {source}: {reason}", source=source, reason=error.strerror or type(error).__name__)
        ) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise UsageError(_("{source} is a folder, not a file", source=source))
        waits = not stat.S_ISREG(mode) and hasattr(select, "select") and os.name == "posix"
        deadline = time.monotonic() + FILE_WAIT_SECONDS if waits else None
        return _strict_text(_read_descriptor(fd, source, deadline), source)
    except OSError as error:
        raise UsageError(
            _("cannot read {source}: {reason}", source=source, reason=error.strerror or type(error).__name__)
        ) from None
    finally:
        os.close(fd)


def _read_stream(stream: TextIO | None) -> str:
    source = _("the model text from standard input")
    if stream is None:
        raise UsageError(_("standard input is closed; give the text as an argument or with --file PATH"))
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is not None:
            data = buffer.read(MAX_INPUT_BYTES + 1)
        else:  # a text stream handed to main() (tests, notebooks): back to bytes, then the same way
            data = stream.read(MAX_INPUT_BYTES + 1).encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise UsageError(_("{source} holds a lone surrogate, which is not text", source=source)) from None
    except (OSError, ValueError) as error:  # ValueError: reading a closed file object
        raise UsageError(_("cannot read {source}: {reason}", source=source, reason=_error_text(error))) from None
    return _strict_text(_bounded(data, source), source)


def _error_text(error: BaseException) -> str:
    strerror = getattr(error, "strerror", None)
    return strerror if isinstance(strerror, str) else type(error).__name__


def _read_model_text(args: argparse.Namespace, stdin: TextIO | None) -> str:
    if args.file is not None:
        return _read_file(args.file, _("the model text from --file"))
    if args.text is None or args.text == "-":
        return _read_stream(stdin)
    source = _("the text argument")
    return _bounded_text(_strict_argument(str(args.text), source), source)


def _bounded_text(text: str, source: str) -> str:
    _bounded(text.encode("utf-8"), source)
    return text


# --------------------------------------------------------------------------- run


def _only_with(args: argparse.Namespace, provider: str, options: dict[str, str]) -> None:
    for attribute, flag in options.items():
        if getattr(args, attribute) is not None and args.provider != provider:
            raise UsageError(_("{flag} only applies to --provider {provider}", flag=flag, provider=provider))


def _require_local_engine() -> None:
    """Without llama-cpp-python, say where its build stands and how to get it (exit 2, no traceback)."""
    from .providers.local_engine import engine_status
    from .workbook.engine_words import engine_report_line

    status = engine_status()
    if not status.ready:
        raise UsageError(engine_report_line(status))


def _check_provider_options(args: argparse.Namespace) -> None:
    _only_with(args, "scripted", {"script": "--script"})
    _only_with(args, "local", {"mode": "--mode"})
    _only_with(
        args,
        "openai",
        {"base_url": "--base-url", "model": "--model", "api_key_env": "--api-key-env", "no_api_key": "--no-api-key"},
    )
    for attribute, flag in (("model", "--model"), ("base_url", "--base-url"), ("api_key_env", "--api-key-env")):
        value = getattr(args, attribute)
        if value is not None:
            setattr(args, attribute, _strict_argument(value, flag))


def _scripted_provider(args: argparse.Namespace) -> tuple[TextProvider, str]:
    if args.script is None:
        raise UsageError(_("--provider scripted needs --script FILE"))
    replies = parse_script(_read_file(args.script, _("the script")))
    return ScriptedProvider(replies), _("scripted ({count} replies)", count=len(replies))


def _local_provider(args: argparse.Namespace) -> tuple[TextProvider, str]:
    # Imported only here: not needed by check or scripted runs. It starts the engine process
    # (or joins the class's server) and raises ProviderError when that fails.
    _require_local_engine()
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


_PROVIDER_BUILDERS: dict[str, Callable[[argparse.Namespace], tuple[TextProvider, str]]] = {
    "scripted": _scripted_provider,
    "local": _local_provider,
    "openai": _openai_provider,
}


def _build_provider(args: argparse.Namespace) -> tuple[TextProvider, str]:
    """The provider ``--provider`` names, and a line describing it (never the API key itself)."""
    _check_provider_options(args)
    try:
        return _PROVIDER_BUILDERS[args.provider](args)
    except (ProviderError, ValueError, TypeError) as error:  # an unset key variable, a missing extra
        from .workbook.provider_words import provider_error_text

        raise UsageError(_("cannot set up the provider: {error}", error=provider_error_text(error))) from None


def _run(args: argparse.Namespace, out: TextIO) -> int:
    workspace = Path(args.workspace)
    if not workspace.is_dir():
        raise UsageError(_("--workspace must be an existing folder: {found}", found=repr(args.workspace)))
    source = _("the task")
    task = _bounded_text(_strict_argument(args.task, source), source)
    if not task.strip():
        raise UsageError(_("the task must not be blank"))
    provider, description = _build_provider(args)
    print(printable(_("provider: {description}", description=description)), file=out)
    # The base model gets no agent-role system message: its prompt is worked examples, and
    # measured on 4 demo tasks an extra "Note:" line cut its final answers from 3 of 4 to 1 of 4.
    transcript = run_agent(
        JsonTextModelAdapter(provider),
        workspace_tools(workspace),
        task,
        system_prompt=None if args.provider == "local" else DEFAULT_SYSTEM_PROMPT,
        max_steps=args.max_steps,
        max_consecutive_rejections=args.max_rejections,
        budget=ModelCallBudget(args.max_output_tokens),
    )
    from .workbook.transcript_view import render_transcript

    print(printable(_scrubbed(provider, render_transcript(transcript))), file=out)
    return EXIT_VALID if transcript.final_answer is not None else EXIT_REJECTED


def _scrubbed(provider: TextProvider, text: str) -> str:
    """The transcript with the provider's secrets masked: a hostile server can echo the key it was sent inside
    a model reply, and ``run`` prints the replies. Providers that hold secrets (the OpenAI-compatible ones) offer
    ``scrub``; asking for the method keeps the offline ``run`` from importing the real providers."""
    scrub = getattr(provider, "scrub", None)
    return str(scrub(text)) if callable(scrub) else text


def _check(args: argparse.Namespace, stdin: TextIO | None, out: TextIO) -> int:
    # The ladder in the edition's language (CAL_LANG, or a notebooks/zh working folder), as the playground shows it;
    # workbook.ladder imports only the chapter, so this costs check no Jupyter.
    from .workbook.ladder import format_ladder

    text = _read_model_text(args, stdin)
    diagnosis = diagnose(text)
    print(printable(format_ladder(diagnosis)), file=out)
    return EXIT_VALID if diagnosis.accepted else EXIT_REJECTED


# --------------------------------------------------------------------------- entry points


def _escape_what_cannot_be_shown(stream: TextIO | None) -> TextIO | None:
    # A console whose encoding lacks ✔ or Chinese (a Windows code page, a latin-1 locale)
    # gets backslash escapes instead of a UnicodeEncodeError halfway through the output.
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")
    return stream


def _say_error(message: str) -> None:
    if sys.stderr is not None:
        with contextlib.suppress(OSError):  # standard error is full or closed too: the exit status still tells
            print(printable(_("error: {message}", message=message)), file=sys.stderr)
            sys.stderr.flush()


def _write_error_text(error: OSError) -> str:
    reason = error.strerror or type(error).__name__
    said = _("cannot write the output: {reason}", reason=reason)
    return said + (_(" (errno {number})", number=error.errno) if error.errno else "")


def _report_write_error(error: OSError, stream: TextIO | None) -> int:
    """One line on standard error (none when the reader simply left, as ``head`` does), then exit status 2.

    What Python still holds for ``stream`` would fail again when it flushes at exit (a second
    traceback, exit status 120); when it is the real standard output, it goes to devnull.
    """
    if not isinstance(error, BrokenPipeError):
        _say_error(_write_error_text(error))
    real = sys.stdout
    if real is not None and stream is not None and stream is real:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    target = stdout if stdout is not None else _escape_what_cannot_be_shown(sys.stdout)
    _escape_what_cannot_be_shown(sys.stderr)
    if target is None:  # started with standard output closed: nowhere to say anything
        return EXIT_USAGE
    out = _GuardedOutput(target)
    try:
        return _dispatch(argv, stdin, out)
    except _OutputFailed as failure:
        return _report_write_error(failure.cause, target)


def _dispatch(argv: Sequence[str] | None, stdin: TextIO | None, out: _GuardedOutput) -> int:
    try:
        with _argparse_speaks():
            args = _build_parser().parse_args(argv)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else EXIT_VALID
    # A write error surfaces here at the latest, not at exit in a traceback.
    writer = cast(TextIO, out)
    if args.command == "verify":
        code = _verify(args, writer)
        out.flush()
        return code
    try:
        if args.command == "run":
            code = _run(args, writer)
        else:
            code = _check(args, stdin if stdin is not None else sys.stdin, writer)
    except UsageError as error:
        _say_error(str(error))
        return EXIT_USAGE
    out.flush()
    return code


def main_entry() -> None:
    """Console-script entry point (``codeagent-lite check ...``, ``codeagent-lite run ...``).

    A reader that stops early (``... | head -3``) closes the pipe; that ends the command
    quietly with exit status 2 instead of a ``BrokenPipeError`` traceback. Any other write
    error (a full disk, ``> /dev/full``, an I/O error) ends it with one line on standard
    error and exit status 2, whichever the subcommand.
    """
    code = main()
    try:
        # argparse's --help writes to sys.stdout itself; its write errors show here.
        if sys.stdout is not None:
            sys.stdout.flush()
    except OSError as error:
        code = _report_write_error(error, sys.stdout)
    sys.exit(code)
