"""Notebook 04's parser playground with your parser's ladder beside ours, live (in verify's killable child process,
so an endless loop cannot freeze the notebook). Not in ``learner_ladder``, which must import without Jupyter."""

from __future__ import annotations

import os

import ipywidgets

from .learner_ladder import LadderPairs, learner_ladders
from .parser_playground import ParserPlayground
from .verify import DEFAULT_TIME_LIMIT
from .words import _

__all__ = ["LearnerPlayground"]


class LearnerPlayground(ParserPlayground):
    """The playground's drop-down, text box and ladder, plus your parser's ladder for the same text."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        initial_preset: str = "duplicate key",
        *,
        time_limit: float = DEFAULT_TIME_LIMIT,
    ) -> None:
        self.directory = directory
        self.time_limit = time_limit
        self.comparison = ipywidgets.HTML()
        self.comparison.add_class("cal-playground-learner")
        super().__init__(initial_preset)
        self.widget.children = (*self.widget.children, self.comparison)
        # Classes of its own: the browser test finds notebook 04's first playground by the cal-playground ones.
        for part, inherited, own in (
            (self.widget, "cal-playground", "cal-learner-playground"),
            (self.preset, "cal-playground-preset", "cal-learner-preset"),
            (self.text, "cal-playground-input", "cal-learner-input"),
            (self.ladder, "cal-playground-ladder", "cal-learner-reference-ladder"),
        ):
            part.remove_class(inherited)
            part.add_class(own)

    def refresh(self) -> None:
        """Both ladders, once typing pauses (the base class's timer calls this): your parser runs in a child that
        may take its whole time limit, so once per keystroke would hold the kernel for as long again each time."""
        super().refresh()
        self.pairs: LadderPairs = learner_ladders(
            self.directory, {_("this reply"): self.text.value}, time_limit=self.time_limit
        )
        self.comparison.value = self.pairs._repr_html_()
