"""How each widget of the workbook shows itself: the live widget, and one line of text where none can render.

On GitHub, in a static export or in a saved notebook without widget state, a front end falls
back to ``text/plain``; for an ipywidgets box that is a long ``VBox(children=(...))`` repr
a learner cannot read. Every playground therefore shows the same widget bundle with its own
one-line description as the plain text. Only the standard library (and the workbook's catalog) is imported here: the
bundle comes from the widget itself, and IPython is imported when something is displayed.
"""

from __future__ import annotations

from typing import Any

from .language import Language
from .words import _

__all__ = ["ShownAsWidget", "live_widget_text"]


def live_widget_text(name: str, language: Language | None = None) -> str:
    """``ParserPlayground: a live widget; ...``: the line every widget shows where it cannot render."""
    return _("{name}: a live widget; run the notebook in Jupyter to use it.", language, name=name)


class ShownAsWidget:
    """Mixin for a class with a ``widget`` attribute: displays that widget, described by ``static_text()``."""

    widget: Any

    def static_text(self) -> str:
        """The line shown where the widget cannot render: by default, the class's name and what it is."""
        return live_widget_text(type(self).__name__)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(**kwargs))
        bundle["text/plain"] = self.static_text()
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)  # type: ignore[no-untyped-call]
