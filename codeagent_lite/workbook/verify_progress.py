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


class _Progress:
    def __init__(self, total: int, quiet: bool = False, handle: Any = None) -> None:
        self.total, self.quiet, self.handle = total, quiet, handle

    def step(self, number: int) -> None:
        line = _("verify: step {step} of {total} · {title} …", step=number, total=self.total, title=step_title(number))
        if self.handle is not None:
            bar = f'<progress value="{number - 1}" max="{self.total}"></progress> {html.escape(line)}'
            self.handle.update({"text/plain": line, "text/html": bar}, raw=True)
        elif not self.quiet:
            print(line, file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.handle is not None:
            self.handle.update({}, raw=True)


def start(total: int, progress: bool | None) -> _Progress:
    """The progress display for a verify of ``total`` steps: ``progress`` None shows it where it can be seen."""
    ipython = sys.modules.get("IPython")  # a notebook's kernel has imported it; never imported here
    shell = ipython.get_ipython() if ipython is not None else None
    if progress is not False and type(shell).__name__ == "ZMQInteractiveShell":
        from IPython.display import display

        return _Progress(total, handle=display({}, raw=True, display_id=True))  # type: ignore[no-untyped-call]
    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    return _Progress(total, quiet=progress is False or not (progress or tty))
