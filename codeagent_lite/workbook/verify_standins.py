"""The parent's side of step 2's stand-ins: it answers every call the learner's adapter makes, and records it.

Why the parent: the adapter is judged by how it calls its helpers and the provider, and facts the child reported
would be the learner's process speaking for itself. The stand-ins in the child (``verify_probe``) only forward
calls; the answers carry a nonce drawn per run (``Inputs.nonce``), so handing the right ones on means having
asked. Learner code writing the requests itself is writing the adapter's calls by another name; a request of the
wrong shape, or past ``_MAX_CALLS``, is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .verify_probe import run_probe
from .words import _

__all__ = ["StandIns", "child_probe", "refusal", "run_here"]

_MAX_CALLS = 8  # an adapter makes three; a loop of them is refused, not answered forever


def refusal(kind: object) -> dict[str, Any]:
    """The refusal, worded here in the learner's language: the child only raises it."""
    call = kind if kind in ("build", "parse", "complete") else "unknown"
    return {"refused": True, "message": _("verify answers no more {call} calls from your adapter", call=call)}


@dataclass
class StandIns:
    values: dict[str, Any]
    built: list[Any] = field(default_factory=list)
    parsed: list[Any] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    asked: int = 0
    provider_raised: bool = False

    def answer(self, request: object) -> dict[str, Any]:
        self.asked += 1
        kind = request.get("call") if isinstance(request, dict) else None
        if self.asked > _MAX_CALLS or not isinstance(request, dict):
            return refusal(kind)
        if kind == "build":
            self.built.append(request.get("history"))
            return {"messages": self.values["canned_messages"]}
        if kind == "parse":
            self.parsed.append(request.get("text"))
            rejection = self.values.get("canned_rejection")
            return {"rejection": rejection} if rejection is not None else {"action": self.values["canned_action"]}
        if kind == "complete":
            return self._complete(request)
        return refusal(kind)

    def _complete(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(
            {
                "messages_same": bool(self.built) and request.get("messages") == self.values["canned_messages"],
                "messages_shown": str(request.get("messages_shown", "")),
                "tools": request.get("tools"),
                "tools_shown": str(request.get("tools_shown", "")),
                "max_output_tokens": request.get("max_output_tokens"),
            }
        )
        failure = self.values.get("failure")
        if failure in ("provider_error", "key_error"):
            self.provider_raised = failure == "provider_error"
            return {"raise": failure, "message": self.values["failure_message"]}
        return {"reply": self.values["reply"], "usage": self.values["usage"]}

    def facts(self, result: dict[str, Any]) -> dict[str, Any]:
        """The child's result with what was seen here in place of anything the child claimed about the calls."""
        seen = {"built": self.built, "parsed": self.parsed, "calls": self.calls}
        return {**result, **seen, "cause_is_original": self._cause_is_original(result.get("error"))}

    def _cause_is_original(self, error: object) -> bool:
        """The error the adapter raised has the provider's failure as its cause: a ProviderError carrying the
        message handed out here (nonce and all), which only the one the stand-in raised had."""
        if not self.provider_raised or not isinstance(error, dict):
            return False
        cause = error.get("cause")
        return (
            isinstance(cause, dict)
            and cause.get("type") == "ProviderError"
            and str(self.values["failure_message"]) in str(error.get("cause_shown", ""))
        )


def child_probe(probe: dict[str, Any]) -> dict[str, Any]:
    """A probe without the stand-ins' values: the child learns them only by calling."""
    return {key: value for key, value in probe.items() if key != "stand_ins"}


def run_here(module: ModuleType, probe: dict[str, Any], package_dir: str = "") -> dict[str, Any]:
    """A probe in this process (the package's own modules, the reference side of ``compare``), its stand-ins
    answered here directly as the channel would."""
    values = probe.get("stand_ins")
    if not isinstance(values, dict):
        return run_probe(module, probe, package_dir)
    stand_ins = StandIns(values)
    return stand_ins.facts(run_probe(module, child_probe(probe), package_dir, ask=stand_ins.answer))
