"""Notebook 06 without a live model (still compiling, or no compiler here): the engine's state, a progress bar,
and outputs recorded by ``scripts/record_real_model_outputs.py`` from a live run, framed so nobody takes them for
live output; a test checks they equal the notebooks' saved live outputs."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..display import escape_html, printable
from ..providers.local_engine import EngineState, EngineStatus, engine_status
from .engine_words import engine_advice, engine_report_line, engine_summary
from .language import Language, edition_language
from .widget_view import ShownAsWidget
from .words import N_, _

RECORDED_PATH = Path(__file__).resolve().parent / "recorded" / "06_real_model.json"
RECORDED_TOP = N_("╭─ RECORDED output, not live")
RECORDED_SIDE = "│ "
RECORDED_BOTTOM = N_("╰─ end of the recorded output; run the cell again once the local engine is ready")
_RECORDED_CALL = re.compile(r"""recorded\(["']([a-z0-9-]+)["']\)""")


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """A real run's text outputs, by edition and cell key, and where they came from."""

    source: Mapping[str, str]
    editions: Mapping[str, Mapping[str, str]]

    def cells(self, language: Language | None = None) -> Mapping[str, str]:
        return self.editions[language or edition_language()]


def load_recorded(path: Path = RECORDED_PATH) -> RecordedRun:
    data = json.loads(path.read_text(encoding="utf-8"))
    return RecordedRun(source=data["source"], editions=data["editions"])


def recorded(key: str, run: RecordedRun | None = None) -> str:
    chosen = load_recorded() if run is None else run
    cells = chosen.cells()
    if key not in cells:
        raise KeyError(f"no recorded output named {key!r}; recorded: {', '.join(sorted(cells))}")
    origin = ", ".join(f"{name} {value}" for name, value in chosen.source.items() if name != "notebooks")
    lines = [_("{top}: from a real run of this notebook ({origin})", top=_(RECORDED_TOP), origin=origin)]
    lines.extend(RECORDED_SIDE + line for line in cells[key].rstrip("\n").splitlines())
    lines.append(_(RECORDED_BOTTOM))
    return "\n".join(lines)


def recorded_cells_of(notebook: Mapping[str, Any]) -> dict[str, str]:
    """The stdout of each code cell that calls ``recorded("key")``, by key: what ``recorded`` must show."""
    found: dict[str, str] = {}
    for cell in notebook["cells"]:
        keys = _RECORDED_CALL.findall("".join(cell["source"])) if cell["cell_type"] == "code" else []
        if len(keys) > 1:
            raise ValueError(f"a cell may show one recorded output, this one names {keys}")
        if keys:
            stdout = [output for output in cell["outputs"] if output.get("name") == "stdout"]
            found[keys[0]] = "".join("".join(output["text"]) for output in stdout)
    return found


def engine_report(status: EngineStatus) -> str:
    if status.ready:
        return engine_summary(status) + "\n" + _("the cells below run the model live")
    lines = [engine_report_line(status)]
    if status.state is EngineState.FAILED and status.log_tail:
        lines.append(_("last lines of the build log:"))
        lines.extend("    " + printable(line) for line in status.log_tail[-6:])
    lines.append(_("Until then, every model cell below shows RECORDED output from a real run of this notebook."))
    return "\n".join(lines)


class EngineMonitor(ShownAsWidget):
    """A daemon thread reads the build log every ``interval`` seconds (ipywidgets sends updates from threads)
    until the build ends or ``give_up_after``."""

    def __init__(self, directory: Path | None = None, interval: float = 2.0, give_up_after: float = 3600.0) -> None:
        import ipywidgets

        self.directory = directory
        self.bar = ipywidgets.FloatProgress(value=0.0, min=0.0, max=1.0, description=_("engine:"))
        self.label = ipywidgets.HTML(value="")
        self.widget = ipywidgets.VBox([self.bar, self.label])
        self.status = self.refresh()
        self._interval = interval
        self._give_up_at = time.monotonic() + give_up_after
        self._thread: threading.Thread | None = None

    def refresh(self) -> EngineStatus:
        status = engine_status(self.directory)
        self.status = status
        if status.state is EngineState.BUILDING and status.progress is not None:
            self.bar.value = status.progress.fraction
            self.bar.bar_style = "info"
            text = engine_summary(status)
        elif status.ready:
            self.bar.value = 1.0
            self.bar.bar_style = "success"
            text = _("local engine: ready. Run the cells again (no restart needed): they will run live.")
        else:
            self.bar.bar_style = "danger"
            text = engine_summary(status) + " " + engine_advice(status)
        self.label.value = f"<pre>{escape_html(text)}</pre>"
        return status

    def start(self) -> EngineMonitor:
        if self._thread is None:
            self._thread = threading.Thread(target=self._follow, name="engine-monitor", daemon=True)
            self._thread.start()
        return self

    def _follow(self) -> None:
        while time.monotonic() < self._give_up_at:
            time.sleep(self._interval)
            if self.refresh().state is not EngineState.BUILDING:
                return

    def static_text(self) -> str:
        return engine_summary(self.status)
