"""The labels the notebooks' own code cells print: both editions' cells are the same bytes, so a cell writes
``say("same_action", ...)``, not ``print("same action as by hand:", ...)``; names of code stay in the cells."""

from __future__ import annotations

from .ladder import layer_label, layer_title
from .words import N_, _

__all__ = ["LABELS", "layer_label", "layer_title", "say"]

LABELS = {
    # ------------------------------------------------------------------ 01: the three files
    "same_action": N_("same action as by hand:"),
    "raised_at": N_("raised: {error} at {layer}"),
    "usage": N_("usage: "),
    "refused_it": N_("{layer} refused it: {message}"),
    # ------------------------------------------------------------------ 02: message conversion
    "before": N_("before:"),
    "after": N_("after: "),
    "items_to_messages": N_("{items} items -> {messages} messages"),
    "by_position": N_("by position:"),
    "dumps_defaults": N_("json.dumps defaults:"),
    "lengths": N_("length: {dumps} vs {ours} characters"),
    "same_data": N_("same data:               "),
    "same_text_dumps": N_("same text, json.dumps:   "),
    "same_text_encode_json": N_("same text, encode_json:  "),
    "encode_json_refused": N_("encode_json refused:"),
    "layer_says": N_("{layer}: {message}"),
    "same_bytes": N_("same data, same prompt bytes:"),
    # ------------------------------------------------------------------ 03: the adapter's flow
    "type_of": N_("{name} is a {kind}"),
    "total": N_("{usage} total: {total}"),
    "in_out": N_("{name} {input} in, {output} out"),
    "kernel_catches": N_("the Kernel catches:"),
    "its_cause": N_("its __cause__:     "),
    "tokens_spent": N_("tokens spent so far:"),
    "raised_caused_by": N_("raised: {error} caused by {cause}"),
    "carries_usage": N_("carries a usage:"),
    "calls_recorded": N_("provider calls recorded:"),
    "usage_on_error": N_("usage on the error:"),
    # ------------------------------------------------------------------ 04: action parsing
    "layer_refuses": N_("✘ {layer} refuses"),
    "passes": N_("✔ passes, hands on {value}"),
    "json_loads_picks": N_("json.loads picks:"),
    "repairing_parser": N_("a repairing parser would run:"),
    "reply_and_correction": N_("reply: {reply} characters; correction: {correction} characters"),
    "exit_status": N_("exit status:"),
    "prediction": N_("{mark} {name}: you said {said}, the parser says {actual}   {text}"),
    "refused_at_layer": N_("{text}: refused at layer {number}: {message}"),
    "crashed": N_("{text}: crashed with {error}: {message}"),
    # ------------------------------------------------------------------ 06: a real model
    "load_seconds": N_("{seconds} s elapsed"),
    "load_failed": N_("the engine is installed, but the model server did not start: {error}"),
    "file_lines": N_("{path} · {count} lines"),
    "tools": N_("tools: {names}"),
    "providers": N_("providers: {first} and {second}"),
    "prompt_size": N_("the prompt for {task!r}: {chars} characters, {lines} lines; ends with a space: {space}"),
    "rejected_at": N_("rejected at layer {layer} ({title}): {message}"),
    "failure_cost": N_("this failure cost {input} input + {output} output tokens"),
    "server_skipped": N_("skipped: CAL_OPENAI_BASE_URL is not set, so no server was asked"),
    "widget_needs_engine": N_("the widget needs the live local engine (see section 1)"),
    # ------------------------------------------------------------------ 07: build it yourself
    "checked_folder": N_("verify checks the folder"),
}


def say(key: str, *values: object, **fields: object) -> None:
    """``print(label, *values)``; a Chinese label ends in a full-width colon, which carries its own space. An error
    among ``fields`` is worded from its data (``provider_words``), not by ``str``."""
    if any(isinstance(value, BaseException) for value in fields.values()):
        from .provider_words import provider_error_text  # here: it imports the providers, which most cells never need

        fields = {name: provider_error_text(v) if isinstance(v, BaseException) else v for name, v in fields.items()}
    label = _(LABELS[key], None, **fields)
    if label.endswith("："):
        print(label + " ".join(map(str, values)))
    else:
        print(label, *values)
