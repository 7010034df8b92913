"""Notebook 06 without a live model: the engine's state, a progress bar, and recorded outputs.

The local engine (llama-cpp-python) may still be compiling in the background, or be
impossible on this machine (no compiler). Notebook 06 must teach either way, so:

* ``engine_report`` says which state the engine is in and what to do about it;
* ``EngineMonitor`` is a progress bar that follows a running build and says when the
  cells can run live (the packages land in the kernel's own environment: no restart);
* ``recorded(key)`` gives a cell's output from a real run of this same notebook, framed
  so nobody can take it for live output. The outputs are data in ``recorded/``, written
  by ``scripts/record_real_model_outputs.py`` from a live run of each edition (the zh
  edition's cells print Chinese labels, so its recording is its own), never by hand; a
  test checks they equal the notebooks' saved live outputs.

The engine's state lines are said in the edition's language by ``engine_words``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..providers.local_engine import EngineState, EngineStatus, engine_status
from .engine_words import engine_advice, engine_summary
from .language import LANGUAGES, Language, edition_language
from .widget_view import ShownAsWidget
from .words import N_, _

__all__ = [
    "RECORDED_PATH",
    "EngineMonitor",
    "RecordedRun",
    "engine_report",
    "load_recorded",
    "recorded",
    "recorded_cells_of",
]

RECORDED_PATH = Path(__file__).resolve().parent / "recorded" / "06_real_model.json"
RECORDED_TOP = N_("╭─ RECORDED output, not live")
RECORDED_SIDE = "│ "
RECORDED_BOTTOM = N_("╰─ end of the recorded output; run the cell again once the local engine is ready")
"""The frame's first and last words (English ids: ``_(RECORDED_TOP)`` in the edition's language)."""
_RECORDED_CALL = re.compile(r"""recorded\(["']([a-z0-9-]+)["']\)""")


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """The text outputs of a real run of notebook 06, by edition and cell key, and where they came from."""

    source: Mapping[str, str]
    editions: Mapping[str, Mapping[str, str]]

    def cells(self, language: Language | None = None) -> Mapping[str, str]:
        """The recorded cells of the edition in ``language`` (default: the edition running now)."""
        return self.editions[language or edition_language()]


def load_recorded(path: Path = RECORDED_PATH) -> RecordedRun:
    """Read the recorded outputs; a missing or malformed file is a clear error, not a KeyError later."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read the recorded outputs {path.name}: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"{path.name}: expected a JSON object, found {type(data).__name__}")
    source, editions = data.get("source"), data.get("editions")
    if not isinstance(source, dict) or not isinstance(editions, dict):
        raise ValueError(f"{path.name}: expected the keys 'source' and 'editions' holding objects")
    return RecordedRun(source=_texts(source, path.name), editions=_every_edition(editions, path.name))


def _every_edition(editions: Mapping[str, Any], name: str) -> dict[str, dict[str, str]]:
    missing = [language for language in LANGUAGES if not isinstance(editions.get(language), dict)]
    if missing:
        raise ValueError(f"{name}: expected a recording of every edition, found none for {', '.join(missing)}")
    return {language: _texts(editions[language], name) for language in LANGUAGES}


def _texts(mapping: Mapping[str, Any], name: str) -> dict[str, str]:
    if not all(isinstance(value, str) for value in mapping.values()):
        raise ValueError(f"{name}: every recorded value must be a string")
    return dict(mapping)


def recorded(key: str, run: RecordedRun | None = None) -> str:
    """The recorded output of the cell named ``key``, framed and labelled as recorded."""
    chosen = load_recorded() if run is None else run
    cells = chosen.cells()
    if key not in cells:
        known = ", ".join(sorted(cells))
        raise KeyError(f"no recorded output named {key!r}; recorded: {known}")
    origin = ", ".join(f"{name} {value}" for name, value in chosen.source.items() if name != "notebooks")
    lines = [_("{top}: from a real run of this notebook ({origin})", top=_(RECORDED_TOP), origin=origin)]
    lines.extend(RECORDED_SIDE + line for line in cells[key].rstrip("\n").splitlines())
    lines.append(_(RECORDED_BOTTOM))
    return "\n".join(lines)


def recorded_cells_of(notebook: Mapping[str, Any]) -> dict[str, str]:
    """The standard output of every code cell that calls ``recorded("key")``, by key.

    Read from an executed notebook (nbformat's JSON): run live, those cells print exactly
    what ``recorded(key)`` shows when the engine is missing.
    """
    found: dict[str, str] = {}
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        keys = _RECORDED_CALL.findall(source if isinstance(source, str) else "".join(source))
        if not keys:
            continue
        if len(keys) > 1:
            raise ValueError(f"a cell may show one recorded output, this one names {keys}")
        texts = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stdout":
                text = output.get("text", "")
                texts.append(text if isinstance(text, str) else "".join(text))
        found[keys[0]] = "".join(texts)
    return found


def engine_report(status: EngineStatus) -> str:
    """The engine's state, what to do next, and whether the cells below run live or show recordings."""
    lines = [engine_summary(status)]
    if status.ready:
        lines.append(_("the cells below run the model live"))
        return "\n".join(lines)
    lines.append(engine_advice(status))
    if status.state is EngineState.FAILED and status.log_tail:
        lines.append(_("last lines of the build log:"))
        lines.extend("    " + line for line in status.log_tail[-6:])
    lines.append(_("Until then, every model cell below shows RECORDED output from a real run of this notebook."))
    return "\n".join(lines)


class EngineMonitor(ShownAsWidget):
    """A progress bar that follows the background build and says when the model can run.

    A daemon thread reads the build log every ``interval`` seconds (ipywidgets sends updates
    from threads) and stops when the build ends or after ``give_up_after`` seconds.
    ``refresh()`` is one such reading, callable from code and tests.
    """

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
        import html

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
        self.label.value = f"<pre>{html.escape(text)}</pre>"
        return status

    def start(self) -> EngineMonitor:
        """Follow the build in the background until it ends."""
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
