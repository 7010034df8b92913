"""Command line: ``python -m codeagent_lite check [TEXT | --file PATH | -]``.

Exit status follows the usual convention so scripts can use it: 0 the text is a
valid action, 1 a layer rejected it, 2 the command itself was used wrongly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from .diagnosis import diagnose, format_ladder

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
    return parser


def _read_text(args: argparse.Namespace, stdin: TextIO) -> str:
    if args.file is not None:
        # newline="" keeps \r\n exactly as the model sent it; the parser decides about it.
        with open(args.file, encoding="utf-8", newline="") as handle:
            return handle.read()
    if args.text is None or args.text == "-":
        return stdin.read()
    return str(args.text)


def main(argv: Sequence[str] | None = None, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    out = stdout if stdout is not None else sys.stdout
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return EXIT_USAGE if exit_.code else EXIT_VALID
    try:
        text = _read_text(args, stdin if stdin is not None else sys.stdin)
    except (OSError, UnicodeDecodeError) as error:
        print(f"error: cannot read the model text: {error}", file=sys.stderr)
        return EXIT_USAGE
    diagnosis = diagnose(text)
    print(format_ladder(diagnosis), file=out)
    return EXIT_VALID if diagnosis.accepted else EXIT_REJECTED


def main_entry() -> None:
    """Console-script entry point (``codeagent-lite check ...``)."""
    sys.exit(main())
