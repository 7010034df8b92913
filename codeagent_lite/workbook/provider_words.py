"""The one place ``ProviderFailure`` codes (``providers/failure.py``) become sentences in the learner's language.

A parameter is shown as it came (already scrubbed); one that is itself a failure is worded the same way. An
error that is not ours (a learner's own ``ProviderError``) carries only its sentence, shown as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..display import error_text
from ..model_adapter import ModelProviderError
from ..providers.failure import FAILURE_WORDS, FailureCode, ProviderFailure
from ..scripted_provider import EXHAUSTED, ScriptExhaustedError
from .language import Language
from .words import _

__all__ = ["failure_text", "provider_error_text", "stored_failure_text"]


def failure_text(failure: ProviderFailure, language: Language | None = None) -> str:
    fields = {
        name: failure_text(value, language) if isinstance(value, ProviderFailure) else value
        for name, value in failure.params.items()
    }
    return _(FAILURE_WORDS[failure.code], language, **fields)


def stored_failure_text(code: str, params: Mapping[str, str], language: Language | None = None) -> str:
    """A failure kept as its code and parameters (a build's ``state.json``); an unknown code is shown as it is."""
    try:
        return failure_text(ProviderFailure(FailureCode(code), **params), language)
    except (ValueError, KeyError, IndexError):  # a file from another version: its code says enough
        return code


def provider_error_text(error: BaseException, language: Language | None = None) -> str:
    """For the failure itself, or the adapter's error raised from it."""
    wrapped = isinstance(error, ModelProviderError)
    ours = error.__cause__ if wrapped else error
    if isinstance(ours, ScriptExhaustedError):
        text = _(EXHAUSTED, language, calls=ours.calls)
    elif isinstance(ours, ProviderFailure):
        text = failure_text(ours, language)
    else:
        return error_text(error)  # not ours: a learner's error class may fail even to print
    return _("provider request failed: {error}", language, error=text) if wrapped else text
