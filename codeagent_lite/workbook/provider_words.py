"""A provider's failure in the learner's language: the one place ``ProviderFailure`` codes become sentences.

``providers/failure.py`` keeps each failure as a code and its parameters, with English templates that are
this catalog's message ids; here they are looked up in the learner's language (``words``), so the agent's
transcript, the command line, notebook 06 and the engine's status say a provider failure in Chinese to a
Chinese learner. A parameter is shown as it came (a number, a path, an already scrubbed excerpt of a
server's text); one that is itself a failure is worded in the same language. An error that is not ours (a
learner's own ``ProviderError``, the scripted provider's) carries only its sentence, shown as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model_adapter import ModelProviderError
from ..providers.failure import FAILURE_WORDS, FailureCode, ProviderFailure
from .language import Language
from .words import _

__all__ = ["failure_text", "provider_error_text", "stored_failure_text"]


def failure_text(failure: ProviderFailure, language: Language | None = None) -> str:
    """``failure`` in ``language``, its nested failures too."""
    fields = {
        name: failure_text(value, language) if isinstance(value, ProviderFailure) else value
        for name, value in failure.params.items()
    }
    return _(FAILURE_WORDS[failure.code], language, **fields)


def stored_failure_text(code: str, params: Mapping[str, str], language: Language | None = None) -> str:
    """A failure kept as its code and parameters (a build's ``state.json``); an unknown code is shown as it is."""
    if code not in set(FailureCode):
        return code
    try:
        return failure_text(ProviderFailure(FailureCode(code), **params), language)
    except (KeyError, IndexError):  # a file from another version lacks a parameter: the code says enough
        return code


def _ours(error: BaseException | None) -> ProviderFailure | None:
    """The ``ProviderFailure`` behind ``error`` (itself, or the cause an adapter raised it from)."""
    seen = 0
    while error is not None and seen < 4:
        if isinstance(error, ProviderFailure):
            return error
        error, seen = error.__cause__, seen + 1
    return None


def provider_error_text(error: BaseException, language: Language | None = None) -> str:
    """What to show of a provider's failure: from its code when it is ours, else its own sentence."""
    failure = _ours(error)
    if failure is None:
        try:
            return str(error)
        except Exception:  # a learner's error class may fail even to print
            return type(error).__name__
    text = failure_text(failure, language)
    if isinstance(error, ModelProviderError):
        return _("provider request failed: {error}", language, error=text)
    return text
