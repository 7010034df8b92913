"""Every widget's plain text: where none can render (GitHub, a static export), a front end shows ``text/plain``,
which for an ipywidgets box is a ``VBox(children=(...))`` repr a learner cannot read."""

from __future__ import annotations

from typing import Any

from .language import Language
from .words import _

__all__ = ["ShownAsWidget", "live_widget_text"]


def live_widget_text(name: str, language: Language | None = None) -> str:
    return _("{name}: a live widget; run the notebook in Jupyter to use it.", language, name=name)


class ShownAsWidget:
    """Mixin for a class with a ``widget`` attribute: displays that widget, described by ``static_text()``."""

    widget: Any

    def static_text(self) -> str:
        return live_widget_text(type(self).__name__)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(**kwargs))
        bundle["text/plain"] = self.static_text()
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)  # type: ignore[no-untyped-call]
