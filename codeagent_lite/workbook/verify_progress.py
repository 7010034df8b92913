"""Progress while verify runs: a line per step on a terminal, a bar in a notebook that leaves nothing behind.

Why it is built this way: a notebook's saved outputs are compared by nbval, which records the
outputs a cell creates (``display_data``, ``execute_result``, streams) and ignores the messages that
change them later (``update_display_data``, ``clear_output``). So ``clear_output`` at the end would
leave nbval a bar the saved notebook lacks (and would clear what the cell printed before verify),
and any bar created with content would be compared. The bar is therefore one display of verify's
own, created *empty* (no data at all: nothing to compare, nothing shown), filled by updates while
the steps run, and emptied again at the end; the report is the cell's result as before. What stays
in the saved notebook is that empty display: no text, no HTML, no widget state, the same on every
machine and every run (nbval compares no data of it). Nothing else of the cell is touched. Outside a
kernel, on a terminal's standard error, a line per step; elsewhere (a pipe, a test) nothing.
"""

from __future__ import annotations

import html
import sys
from typing import Any, Protocol

from .contract import step_title
from .words import _

__all__ = ["Progress", "start"]


class Progress(Protocol):
    def step(self, number: int) -> None: ...

    def done(self) -> None: ...


def _shell() -> Any:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell if shell is not None and type(shell).__name__ == "ZMQInteractiveShell" else None


def _line(number: int, total: int) -> str:
    return _("verify: step {step} of {total} · {title} …", step=number, total=total, title=step_title(number))


class _Silent:
    def step(self, number: int) -> None:
        return None

    def done(self) -> None:
        return None


class _Terminal:
    def __init__(self, total: int) -> None:
        self.total = total

    def step(self, number: int) -> None:
        print(_line(number, total=self.total), file=sys.stderr, flush=True)

    def done(self) -> None:
        return None


class _Notebook:
    """One display of verify's own: empty, a bar per step, empty again."""

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


def start(total: int, progress: bool | None) -> Progress:
    """The progress display for a verify of ``total`` steps: ``progress`` None shows it where it can be seen."""
    shell = _shell()
    if progress is False:
        return _Silent()
    if shell is not None:
        return _Notebook(total)
    if progress or bool(getattr(sys.stderr, "isatty", lambda: False)()):
        return _Terminal(total)
    return _Silent()
