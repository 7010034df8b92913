"""A refusal's ``expected`` and ``found`` in the learner's language, made from its ``code`` and ``params``.

Why: the chapter says each refusal once, in English, for the model; a learner reading the Chinese edition needs the
same two facts in Chinese, on the ladder's "=>" line and in the playground. They come from the error's data, never
from reading its English back. Where a fact is the reply's own text (the rest of it where json gave up, a number, a
type name), it is shown as the error holds it; a code this table does not know (a learner's own) keeps both as given.
"""

from __future__ import annotations

from ..display import JSON_KINDS, few_names, json_kind, quote
from ..json_action_parser import CONTRACTS
from ..model_adapter import InvalidModelOutputError
from .language import Language
from .words import N_, _

__all__ = ["expected_and_found"]

_EXPECTED = {
    "code_fence": N_("bare JSON"),
    "cut_off": N_("all of it"),
    "two_values": N_("exactly one JSON value"),
    "prose_around": N_("nothing but the JSON value"),
    "single_quotes": N_('a double quote (")'),
    "trailing_comma": N_("another item after the comma"),
    "control_character": N_("an escape"),
    "too_deep": N_("at most {limit} levels"),
    "duplicate_key": N_("each key at most once per object"),
    "number_too_long": N_("at most {limit} digits"),
    "not_finite": N_("a finite JSON number"),
    "not_text": N_("a string"),
    "empty": N_("one JSON value"),
    "bom": N_("the JSON itself"),
    "lone_surrogate": N_("valid Unicode text"),
    "not_an_object": N_("a JSON object {...}"),
    "unknown_type": N_("'tool_call' or 'final_answer'"),
    "missing_field": N_("exactly {fields}"),
    "extra_field": N_("exactly {fields}"),
    "blank": N_("a non-blank string"),
}
_FILLED = frozenset({"too_deep", "number_too_long", "missing_field", "extra_field"})
_BY_FIELD_KIND = {"an object": N_("an object"), "a non-blank string": N_("a string")}  # a wrong_type's expected
_FIELD_KINDS = {name: kind for contract in CONTRACTS.values() for name, kind in contract.items()}
_JSON_EXPECTING = {N_("value"), N_("',' delimiter"), N_("':' delimiter"), N_("property name enclosed in double quotes")}
"""What ``json`` says it expected where it gave up (code ``not_json``), those a model's reply meets."""

_FOUND = {
    "too_deep": N_("deeper"),
    "duplicate_key": N_("a second {key}"),
    "number_too_long": N_("{digits} digits"),
    "lone_surrogate": N_("a lone {code_point}"),
    "unknown_type": N_('no "type" field'),  # unless the reply had one: then its value
}
_VALUE_FOUND = frozenset({"not_an_object", "unknown_type", "wrong_type", "blank"})  # found: the value's kind
_EMPTY = {True: N_("empty text"), False: N_("only whitespace")}


def expected_and_found(error: InvalidModelOutputError, language: Language | None = None) -> tuple[str, str]:
    code, params = error.code, dict(error.params)
    if code not in _EXPECTED and code not in ("wrong_type", "not_json"):
        return str(error.expected), str(error.found)
    return _expected(error, code, params, language), _found(error, code, params, language)


def _expected(error: InvalidModelOutputError, code: str, params: dict[str, object], language: Language | None) -> str:
    if code == "not_json":
        return _(str(error.expected), language) if error.expected in _JSON_EXPECTING else str(error.expected)
    if code == "wrong_type":
        kind = _FIELD_KINDS.get(str(params.get("field")), "")
        return _(_BY_FIELD_KIND[kind], language) if kind in _BY_FIELD_KIND else str(error.expected)  # the type's own
    names = params.get("fields")
    fields = {
        "limit": params.get("limit"),
        "fields": ", ".join(map(str, names)) if isinstance(names, tuple) else "",
    }
    template = _EXPECTED[code]  # filled only where it has fields: "a JSON object {...}" has braces of its own
    return _(template, language, **fields) if code in _FILLED else _(template, language)


def _found(error: InvalidModelOutputError, code: str, params: dict[str, object], language: Language | None) -> str:
    if code in _VALUE_FOUND and "value" in params:
        words = {kind: _(text, language) for kind, text in JSON_KINDS.items()}
        return json_kind(params["value"], words)
    if code in _FOUND:
        point = params.get("code_point")
        lone = f"U+{point:04X}" if isinstance(point, int) else ""
        return _(
            _FOUND[code], language, key=quote(str(params.get("key", ""))), digits=params.get("digits"), code_point=lone
        )
    if code in ("missing_field", "extra_field"):
        return _field_set(params, language)
    if code == "empty" and isinstance(error.raw_text, str):
        return _(_EMPTY[error.raw_text == ""], language)
    if params.get("at_end") is True:
        return _(N_("the end of the text"), language)
    return str(error.found)


def _field_set(params: dict[str, object], language: Language | None) -> str:
    """What is missing and what is not in the contract, named as the parser names them."""
    missing, unexpected = (_names(params.get(name)) for name in ("missing", "unexpected"))
    said = [_("missing {names}", language, names=", ".join(missing))] if missing else []
    if unexpected:
        names = few_names(unexpected, more=_(" and {count} more", language))
        said.append(_("unexpected {names}", language, names=names))
    return _("; ", language).join(said)


def _names(value: object) -> list[str]:
    return [str(name) for name in value] if isinstance(value, tuple) else []
