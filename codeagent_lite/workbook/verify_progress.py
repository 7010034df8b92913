"""Progress while verify runs: a line per step on a terminal, a bar in a notebook that leaves nothing behind.

Why a bar created empty, filled by updates and emptied at the end: nbval compares the outputs a cell creates, not
later updates, and ``clear_output`` would also clear what the cell printed before: every machine saves the same.
"""

from __future__ import annotations

import html
import sys

from .contract import step_title
from .words import _

__all__ = ["start"]


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

    def step(self, number: int) -> None:
        line = _line(number, total=self.total)
        bar = f'<progress value="{number - 1}" max="{self.total}"></progress> {html.escape(line)}'
        self.handle.update({"text/plain": line, "text/html": bar}, raw=True)

    def done(self) -> None:
        self.handle.update({}, raw=True)


def start(total: int, progress: bool | None) -> _Terminal | _Notebook:
    """The progress display for a verify of ``total`` steps: ``progress`` None shows it where it can be seen."""
    ipython = sys.modules.get("IPython")  # a notebook's kernel has imported it; never imported here
    shell = ipython.get_ipython() if ipython is not None else None
    if progress is not False and type(shell).__name__ == "ZMQInteractiveShell":
        return _Notebook(total)
    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    return _Terminal(total, quiet=progress is False or not (progress or tty))
