"""Command line: ``python -m codeagent_lite check [TEXT | --file PATH | -]`` and ``... run TASK``.

Exit status follows the usual convention so scripts can use it: 0 the text is a
valid action (``run``: a final answer was reached), 1 a layer rejected it (``run``: the
loop stopped without a final answer), 2 the command itself was used wrongly.

``run`` imports the real providers only when asked for them, so ``check`` and
``run --provider scripted`` work without the optional ``openai`` and ``local`` extras.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TextIO

from .agent.loop import DEFAULT_SYSTEM_PROMPT, run_agent
from .agent.workspace_tools import workspace_tools
from .diagnosis import diagnose, format_ladder
from .json_text_adapter import JsonTextModelAdapter, ProviderError, TextProvider
from .model_adapter import ModelCallBudget
from .scripted_provider import ScriptedProvider

EXIT_VALID = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m codeagent_lite",
        description="Tools from the codeagent-lite workbook (JSON text model section).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = commands.add_parser(
        "check",
        help="run raw model text through the four validation layers",
        description="Show which validation layers raw model text passes, and the action it becomes.",
    )
    source = check.add_mutually_exclusive_group()
    source.add_argument("text", nargs="?", help="the raw model text; '-' or nothing reads standard input")
    source.add_argument("--file", "-f", metavar="PATH", help="read the raw model text from a UTF-8 file")
    _add_run_command(commands)
    return parser


def _int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for whole numbers >= ``minimum``, with a message that says what came instead."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a number >= {minimum}, found {value}")
        return value

    return convert


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)


def _add_run_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help="run the agent loop on a task with a model and the two workspace tools",
        description=(
            "Run the agent loop: the model answers in JSON text, read_file and list_files act inside "
            "the workspace, and every step is printed with its layer verdicts and token usage."
        ),
    )
    run.add_argument("task", help="what the agent should do")
    run.add_argument("--provider", required=True, choices=("local", "openai", "scripted"), help="which model to ask")
    run.add_argument(
        "--mode",
        choices=("free_text", "schema"),
        help="local model only: free text (default) or replies constrained by the action JSON Schema",
    )
    run.add_argument("--base-url", metavar="URL", help="openai only: the server, e.g. https://api.deepseek.com/v1")
    run.add_argument("--model", metavar="NAME", help="openai only: the model name the server knows")
    key = run.add_mutually_exclusive_group()
    key.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="openai only: the environment variable holding the API key (default OPENAI_API_KEY)",
    )
    key.add_argument(
        "--no-api-key",
        action="store_const",
        const=True,
        help="openai only: the server needs no key (Ollama, llama.cpp's server)",
    )
    run.add_argument(
        "--script",
        metavar="FILE",
        help="scripted only: replies to replay, a JSON array or one raw reply per line",
    )
    run.add_argument("--workspace", default=".", metavar="DIR", help="the folder the tools may read (default: .)")
    run.add_argument("--max-steps", type=_positive_int, default=8, metavar="N", help="most model calls (default 8)")
    run.add_argument(
        "--max-rejections",
        type=_non_negative_int,
        default=2,
        metavar="N",
        help="most corrections sent in a row before giving up (default 2)",
    )
    run.add_argument(
        "--max-output-tokens", type=_positive_int, default=256, metavar="N", help="per model call (default 256)"
    )


class UsageError(Exception):
    """The ``run`` command cannot start; the message says why (exit status 2)."""


def parse_script(text: str) -> tuple[str, ...]:
    """Scripted replies from a file's text: a JSON array, or else one raw reply per non-blank line.

    In an array, a string is the reply text verbatim and an object is written as
    compact JSON, so a teacher can script valid actions as objects and broken replies
    as strings. In the line form each line is sent exactly as written (it is not parsed
    here: checking it is the agent loop's job).
    """
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, list):
        replies = []
        for number, item in enumerate(value, start=1):
            if isinstance(item, str):
                replies.append(item)
            elif isinstance(item, dict):
                replies.append(json.dumps(item, ensure_ascii=False))
            else:
                raise UsageError(f"script item {number} must be a string or an object, not {type(item).__name__}")
    else:
        replies = [line for line in text.splitlines() if line.strip()]
    if not replies:
        raise UsageError("the script holds no replies")
    return tuple(replies)


def _only_with(args: argparse.Namespace, provider: str, options: dict[str, str]) -> None:
    for attribute, flag in options.items():
        if getattr(args, attribute) is not None and args.provider != provider:
            raise UsageError(f"{flag} only applies to --provider {provider}")


def _require_local_engine() -> None:
    """Without llama-cpp-python, say where its build stands and how to get it (exit 2, no traceback)."""
    from .providers.local_engine import engine_status

    status = engine_status()
    if not status.ready:
        raise UsageError(f"{status.summary()}\n{status.how_to_get_it()}")


def _build_provider(args: argparse.Namespace) -> tuple[TextProvider, str]:
    """The provider ``--provider`` names, and a line describing it (never the API key itself)."""
    _only_with(args, "scripted", {"script": "--script"})
    _only_with(args, "local", {"mode": "--mode"})
    _only_with(
        args,
        "openai",
        {"base_url": "--base-url", "model": "--model", "api_key_env": "--api-key-env", "no_api_key": "--no-api-key"},
    )
    if args.provider == "scripted":
        if args.script is None:
            raise UsageError("--provider scripted needs --script FILE")
        try:
            text = Path(args.script).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"cannot read the script: {error}") from None
        replies = parse_script(text)
        return ScriptedProvider(replies), f"scripted ({len(replies)} replies)"
    # Imported only here: these modules are not needed by check or scripted runs. They load
    # llama_cpp / openai when a provider is created and raise ProviderError if the extra is missing.
    if args.provider == "local":
        _require_local_engine()
        from .providers.local_llama import LocalGemmaProvider

        mode: Literal["free_text", "schema"] = "schema" if args.mode == "schema" else "free_text"
        return LocalGemmaProvider(mode=mode), f"local Gemma 3 270M ({mode})"
    if args.base_url is None or args.model is None:
        raise UsageError("--provider openai needs --base-url URL and --model NAME")
    from .providers.openai_compatible import OpenAICompatibleProvider

    key_env: str | None = None if args.no_api_key else (args.api_key_env or "OPENAI_API_KEY")
    provider = OpenAICompatibleProvider(args.base_url, args.model, api_key_env=key_env)
    key_note = "no API key" if key_env is None else f"API key from ${key_env}"
    return provider, f"openai-compatible ({args.model} at {args.base_url}, {key_note})"


def _run(args: argparse.Namespace, out: TextIO) -> int:
    workspace = Path(args.workspace)
    if not workspace.is_dir():
        raise UsageError(f"--workspace must be an existing folder: {args.workspace!r}")
    if not args.task.strip():
        raise UsageError("the task must not be blank")
    try:
        provider, description = _build_provider(args)
    except (ProviderError, ValueError) as error:  # e.g. an unset API key variable, a missing extra
        raise UsageError(f"cannot set up the provider: {error}") from None
    print(f"provider: {description}", file=out)
    # The base model gets no agent-role system message: its prompt is worked examples, and
    # measured on 4 demo tasks an extra "Note:" line cut its final answers from 3 of 4 to 1 of 4.
    transcript = run_agent(
        JsonTextModelAdapter(provider),
        workspace_tools(workspace),
        args.task,
        system_prompt=None if args.provider == "local" else DEFAULT_SYSTEM_PROMPT,
        max_steps=args.max_steps,
        max_consecutive_rejections=args.max_rejections,
        budget=ModelCallBudget(args.max_output_tokens),
    )
    print(transcript.render(), file=out)
    return EXIT_VALID if transcript.final_answer is not None else EXIT_REJECTED


def _read_text(args: argparse.Namespace, stdin: TextIO) -> str:
    if args.file is not None:
        # newline="" keeps \r\n exactly as the model sent it; the parser decides about it.
        with open(args.file, encoding="utf-8", newline="") as handle:
            return handle.read()
    if args.text is None or args.text == "-":
        return stdin.read()
    return str(args.text)


def _escape_what_cannot_be_shown(stream: TextIO) -> TextIO:
    # A console whose encoding lacks ✔ or Chinese (a Windows code page, a latin-1 locale)
    # gets backslash escapes instead of a UnicodeEncodeError halfway through the output.
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")
    return stream


def main(argv: Sequence[str] | None = None, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    out = stdout if stdout is not None else _escape_what_cannot_be_shown(sys.stdout)
    _escape_what_cannot_be_shown(sys.stderr)
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else EXIT_VALID
    if args.command == "run":
        try:
            return _run(args, out)
        except UsageError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_USAGE
    try:
        text = _read_text(args, stdin if stdin is not None else sys.stdin)
    except (OSError, UnicodeDecodeError) as error:
        print(f"error: cannot read the model text: {error}", file=sys.stderr)
        return EXIT_USAGE
    diagnosis = diagnose(text)
    print(format_ladder(diagnosis), file=out)
    return EXIT_VALID if diagnosis.accepted else EXIT_REJECTED


def main_entry() -> None:
    """Console-script entry point (``codeagent-lite check ...``, ``codeagent-lite run ...``)."""
    sys.exit(main())
