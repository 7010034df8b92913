"""Progress while verify runs: a line per step on a terminal, a bar in a notebook that becomes the report.

Why the bar becomes the report: a notebook's saved outputs are compared by nbval, so a progress
display left behind (even an emptied one) is a trace, and ``clear_output`` would also clear what
the cell printed before verify ran. So the bar is one display of verify's own (a display handle),
updated per step, and at the end updated into the report itself; the report the call returns then
does not show itself a second time in the same cell (``shown_here``). Nothing but that one output is
touched. Outside a kernel, on a terminal's standard error, a line per step; elsewhere (a pipe, a
test) nothing.
"""

from __future__ import annotations

import html
import sys
from typing import Any, Protocol

from .contract import step_title
from .words import _

__all__ = ["Progress", "in_a_kernel", "shown_here", "start"]


class Progress(Protocol):
    def step(self, number: int) -> None: ...

    def done(self, report: Any) -> None: ...


def in_a_kernel() -> bool:
    """Inside a Jupyter kernel: its standard error is a cell's output, which nbval compares with the saved one."""
    return _shell() is not None


def _shell() -> Any:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell if shell is not None and type(shell).__name__ == "ZMQInteractiveShell" else None


def _line(number: int, total: int) -> str:
    return _("verify: step {step} of {total} · {title} …", step=number, total=total, title=step_title(number))


class _Silent:
    def step(self, number: int) -> None:
        return None

    def done(self, report: Any) -> None:
        return None


class _Terminal:
    def __init__(self, total: int) -> None:
        self.total = total

    def step(self, number: int) -> None:
        print(_line(number, total=self.total), file=sys.stderr, flush=True)

    def done(self, report: Any) -> None:
        return None


class _Notebook:
    """One display of verify's own: a bar per step, then the report in its place."""

    def __init__(self, total: int, shell: Any) -> None:
        from IPython.display import display

        self.total = total
        self.shell = shell
        self.handle = display(self._bar(0, ""), raw=True, display_id=True)  # type: ignore[no-untyped-call]

    def _bar(self, done: int, line: str) -> dict[str, str]:
        bar = f'<progress value="{done}" max="{self.total}"></progress> {html.escape(line)}'
        return {"text/plain": line, "text/html": bar}

    def step(self, number: int) -> None:
        self.handle.update(self._bar(number - 1, _line(number, total=self.total)), raw=True)

    def done(self, report: Any) -> None:
        self.handle.update({"text/plain": repr(report), "text/html": report._repr_html_()}, raw=True)
        _shown[id(report)] = self.shell.execution_count


_shown: dict[int, int] = {}


def shown_here(report: Any) -> bool:
    """Whether ``report`` is already on screen in the cell running now (its progress bar became it)."""
    shell = _shell()
    return shell is not None and _shown.get(id(report)) == shell.execution_count


def start(total: int, progress: bool | None) -> Progress:
    """The progress display for a verify of ``total`` steps: ``progress`` None shows it where it can be seen."""
    shell = _shell()
    if progress is False:
        return _Silent()
    if shell is not None:
        return _Notebook(total, shell)
    if progress or bool(getattr(sys.stderr, "isatty", lambda: False)()):
        return _Terminal(total)
    return _Silent()
