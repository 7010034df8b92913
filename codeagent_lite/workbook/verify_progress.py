"""Progress while verify runs: a line per step on a terminal, a bar in a notebook that leaves nothing behind.

Why a bar created empty, filled by updates and emptied at the end: nbval compares the outputs a cell creates, not
later updates, and ``clear_output`` would also clear what the cell printed before: every machine saves the same.
"""

from __future__ import annotations

import html
import sys
from typing import Any

from .contract import step_title
from .words import _

__all__ = ["start"]


def _shell() -> Any:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell if shell is not None and type(shell).__name__ == "ZMQInteractiveShell" else None


def _line(number: int, total: int) -> str:
    return _("verify: step {step} of {total} · {title} …", step=number, total=total, title=step_title(number))


class _Terminal:
    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet = total, quiet

    def step(self, number: int) -> None:
        if not self.quiet:
            print(_line(number, total=self.total), file=sys.stderr, flush=True)

    def done(self) -> None:
        return None


class _Notebook:
    def __init__(self, total: int) -> None:
        from IPython.display import display

        self.total = total
        self.handle = display({}, raw=True, display_id=True)  # type: ignore[no-untyped-call]

    def _bar(self, done: int, line: str) -> dict[str, str]:
        bar = f'<progress value="{done}" max="{self.total}"></progress> {html.escape(line)}'
        return {"text/plain": line, "text/html": bar}

    def step(self, number: int) -> None:
        self.handle.update(self._bar(number - 1, _line(number, total=self.total)), raw=True)

    def done(self) -> None:
        self.handle.update({}, raw=True)


def start(total: int, progress: bool | None) -> _Terminal | _Notebook:
    """The progress display for a verify of ``total`` steps: ``progress`` None shows it where it can be seen."""
    if progress is not False and _shell() is not None:
        return _Notebook(total)
    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    return _Terminal(total, quiet=progress is False or not (progress or tty))
