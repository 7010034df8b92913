"""The probe side of verify: call a learner's function on given inputs and describe what happened, as data.

It runs inside the sandbox beside the learner's files, so it imports only the standard library, the Kernel types
and ``workbook.wire``, never the reference chapter or ``contract``; it decides nothing. Step 2's stand-ins and
provider forward every call to the parent (``ask``), which sees what the adapter did instead of being told.
``main()`` asks for a step's probes (``{"next": true}``; the parent fences first), loads each file when first
needed, and sends ``{"start": key}`` then ``{"done": key, ...}``, ``key`` being ``load:<file>`` or the probe's
place in the parent's list, never a check id.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.abc
import importlib.machinery
import io
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from codeagent_lite import kernel_types
from codeagent_lite.model_adapter import InvalidModelOutputError, ModelCallBudget, ValidationLayer
from codeagent_lite.workbook import wire
from codeagent_lite.workbook.wire import encode, shown

__all__ = ["describe_error", "encode", "kernel_value", "main", "package_module", "run_probe"]

_MAX_ITEMS = wire.Caps().items  # the messages a probe describes, the codec's own list cut
MAX_TEXT = wire.Caps().text  # a shown text's cut, the codec's own; verify_child checks what arrives against it
_KERNEL = frozenset({"codeagent_lite", "codeagent_lite.kernel_types", "codeagent_lite.model_adapter"})
_KERNEL_VALUES = wire.classes_of(kernel_types)
"""What the parent's ``wire.encode``d values may decode into: the Kernel's types, nothing of the learner's."""


def kernel_value(data: Any) -> Any:
    return wire.decode(data, _KERNEL_VALUES)


def describe_error(error: BaseException, package_dir: str = "") -> dict[str, Any]:
    """``wire.describe_error``'s facts, and what only a learner's raise has: where in their folder it was raised,
    a syntax error's place, an exit's code and the cause as it would print."""
    described = wire.describe_error(error)
    described["message"] = _relative(described["message"], package_dir)
    described["place"] = None
    with contextlib.suppress(Exception):  # the innermost frame in the learner's folder
        for frame in traceback.extract_tb(error.__traceback__):
            if package_dir and os.path.dirname(os.path.abspath(frame.filename)) == package_dir:
                described["place"] = [os.path.basename(frame.filename), frame.lineno]
    if error.__cause__ is not None:
        described["cause_shown"] = _relative(shown(error.__cause__), package_dir)
    if isinstance(error, SyntaxError) and error.filename:
        described["syntax"] = [os.path.basename(error.filename), error.lineno, str(error.msg)]
    if isinstance(error, SystemExit):
        described["exit_code"] = shown(error.code)
    return described


def _relative(text: str, package_dir: str) -> str:
    """``text`` without this machine's paths (an ImportError names the file it looked in): relative to the sandbox
    and to the interpreter's prefix, as a report must read the same on every machine."""
    for root in (os.path.dirname(package_dir), sys.base_prefix):
        if root:
            text = text.replace(os.path.join(root, ""), "")
    return text


def run_probe(
    module: types.ModuleType, probe: dict[str, Any], package_dir: str = "", ask: Ask | None = None
) -> dict[str, Any]:
    """Run one probe on ``module``; ``{"value": ...}`` or ``{"error": ...}``. ``ask`` answers the stand-ins'
    calls (over the channel in the sandbox; ``verify_standins`` in the parent's own process)."""
    try:
        if probe["kind"] not in _PROBES:
            raise ValueError(f"unknown probe {probe['kind']!r}")
        return _PROBES[probe["kind"]](module, probe, ask)
    except BaseException as error:  # learner code: anything may come out, even SystemExit
        return {"error": describe_error(error, package_dir)}


def _parse(module: types.ModuleType, probe: dict[str, Any], ask: Ask | None) -> dict[str, Any]:
    """One text, or several (a refused text and its valid look-alike, in the parent's order): each on its own."""
    if "texts" in probe:
        return {"value": {"each": [run_probe(module, {"kind": "parse", "text": text}) for text in probe["texts"]]}}
    result = module.parse_json_action(probe["text"])
    return {"value": encode(result, caps=wire.Caps.holding(probe["text"])), "shown": shown(result)}


def _history(module: types.ModuleType, probe: dict[str, Any], ask: Ask | None) -> dict[str, Any]:
    history = kernel_value(probe["history"])
    if probe.get("each"):
        return {"value": {"each": [_messages(module, [item]) for item in history]}}
    return {"value": _messages(module, history)}


def _cut(value: Any, limit: int = MAX_TEXT) -> str | None:
    return value[:limit] if isinstance(value, str) else None


def _messages(module: types.ModuleType, history: list[Any]) -> dict[str, Any]:
    result = module.build_provider_messages(history)
    try:
        items = list(result)
    except TypeError:
        return {"iterable": False, "shown": shown(result)}
    kind = getattr(module, "ProviderMessage", None)
    described = [
        {
            "is_provider_message": isinstance(kind, type) and isinstance(item, kind),
            "role": _cut(getattr(item, "role", None)),
            "content": _cut(getattr(item, "content", None), 100_000),
            "shown": shown(item),
        }
        for item in items[:_MAX_ITEMS]
    ]
    return {"iterable": True, "items": described, "shown": shown(items)}


@dataclasses.dataclass(frozen=True)
class _CannedMessage:
    """What the stand-in build_provider_messages returns: the adapter must hand exactly these on."""

    role: str
    content: str


class _Refused(RuntimeError):
    """verify refused a stand-in's call (too many of them, or of a shape it does not know)."""


Ask = Callable[[dict[str, Any]], Any]


def _asked(ask: Ask, request: dict[str, Any]) -> dict[str, Any]:
    answer = ask(request)
    if not isinstance(answer, dict) or answer.get("refused"):
        said = answer.get("message") if isinstance(answer, dict) else None
        raise _Refused(said if isinstance(said, str) else "verify refused this call")
    return answer


class _Provider:
    """A provider whose every call is the parent's to answer; it answers with the learner's own
    ``ProviderResponse``, or raises the learner's ``ProviderError`` (or a KeyError) when told to."""

    def __init__(self, module: types.ModuleType, ask: Ask) -> None:
        self._module, self._ask = module, ask

    def complete(self, *, messages: Any, tools: Any, max_output_tokens: Any) -> Any:
        sent = list(messages)[:_MAX_ITEMS]
        described = [[_cut(getattr(item, "role", None)), _cut(getattr(item, "content", None))] for item in sent]
        request = {
            "call": "complete",
            "messages": described,
            "messages_shown": shown(messages, 120),
            "tools": encode(list(tools)),
            "tools_shown": shown(tools, 120),
            "max_output_tokens": encode(max_output_tokens),
        }
        answer = _asked(self._ask, request)
        told = answer.get("raise")
        if told in ("provider_error", "key_error"):
            raise (self._module.ProviderError if told == "provider_error" else KeyError)(str(answer.get("message")))
        tokens = answer["usage"]
        return self._module.ProviderResponse(text=answer["reply"], input_tokens=tokens[0], output_tokens=tokens[1])


def _adapter(module: types.ModuleType, probe: dict[str, Any], given: Ask | None) -> dict[str, Any]:
    ask = given or (lambda request: {"refused": True})

    def build_provider_messages(history: Any) -> Any:
        answer = _asked(ask, {"call": "build", "history": encode(list(history))})
        return [_CannedMessage(str(role), str(content)) for role, content in answer["messages"]]

    def parse_json_action(raw_text: Any) -> Any:
        text = raw_text if isinstance(raw_text, str) else shown(raw_text)
        answer = _asked(ask, {"call": "parse", "text": text[:100_000]})
        rejection = answer.get("rejection")
        if rejection is not None:
            raise InvalidModelOutputError(str(rejection["message"]), layer=ValidationLayer(rejection["layer"]))
        return kernel_value(answer["action"])

    history = kernel_value(probe["history"])
    tools = kernel_value(probe["tools"])
    budget = ModelCallBudget(max_output_tokens=probe["max_output_tokens"])
    with _lend(module, build_provider_messages, parse_json_action):
        adapter = module.JsonTextModelAdapter(_Provider(module, ask))
        response = adapter.complete(history, tools, budget)
    return {"value": encode(response), "shown": shown(response)}


@contextlib.contextmanager
def _lend(module: types.ModuleType, build: Any, parse: Any) -> Iterator[None]:
    """Replace the adapter's two helpers (its own and its siblings'), and put them back after: by name, and under
    any other name they are bound to (``import parse_json_action as _parse``), or a correct adapter fails step 2."""
    helpers = {"build_provider_messages": build, "parse_json_action": parse}
    package = module.__name__.rpartition(".")[0]
    siblings = [sys.modules.get(f"{package}.{name}") for name in ("json_text_messages", "json_action_parser")]
    targets = [module, *(sibling for sibling in siblings if sibling is not None)]
    saved = _bindings(targets, helpers)
    try:
        for target, name, _original, helper in saved:
            setattr(target, name, helper)
        yield
    finally:
        for target, name, original, _helper in saved:
            setattr(target, name, original)


def _bindings(targets: list[types.ModuleType], helpers: dict[str, Any]) -> list[tuple[types.ModuleType, str, Any, Any]]:
    """(module, name, what it holds, its stand-in) for each name bound to a helper: its own, or an alias of a
    sibling's (``targets[1:]``) function."""
    by_identity = {id(vars(t)[n]): helper for t in targets[1:] for n, helper in helpers.items() if n in vars(t)}
    found = []
    for target in targets:
        for name, value in list(vars(target).items()):
            helper = helpers.get(name) or by_identity.get(id(value))
            if helper is not None:
                found.append((target, name, value, helper))
    return found


_PROBES: dict[str, Callable[[types.ModuleType, dict[str, Any], Ask | None], dict[str, Any]]] = {
    "messages": _history,
    "adapter": _adapter,
    "parse": _parse,
}


# --------------------------------------------------------------------------- the sandbox program


class _ReferenceGuard(importlib.abc.MetaPathFinder):
    """Notes every attempt to import the package beyond the Kernel types (or ``solutions``) with the learner's file
    that made it, and refuses it. The adapter imports the learner's parser while it loads: a reference import in
    the parser is the parser's, not the adapter's."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.attempts: list[tuple[str, str]] = []  # (the importing file, the module), each once
        self.said: set[tuple[str, str]] = set()

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None) -> None:
        top = fullname.split(".")[0]
        if (top == "codeagent_lite" and fullname not in _KERNEL) or top == "solutions":
            if (attempt := (self._importer(), fullname)) not in self.attempts:
                self.attempts.append(attempt)
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None

    def _importer(self) -> str:
        """The learner's file whose code is importing ("" when none is: then it is the one being run's)."""
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None and not str(frame.f_globals.get("__name__", "")).startswith(self.package + "."):
            frame = frame.f_back
        return "" if frame is None else str(frame.f_globals["__name__"]).removeprefix(self.package + ".")

    def unsaid(self, file: str) -> list[str]:
        """``file``'s attempts not reported yet: each is said once, by the file that made it."""
        new = [attempt for attempt in self.attempts if attempt[0] in (file, "") and attempt not in self.said]
        self.said.update(new)
        return [name for _importer, name in new]


def package_module(name: str, directory: str) -> types.ModuleType:
    """The learner's folder as a package that has not run its ``__init__``: each file loads on its own."""
    package = types.ModuleType(name, f"the learner's folder {os.path.basename(directory)}")
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [directory]
    package.__spec__ = spec
    package.__path__ = [directory]
    package.__package__ = name
    return package


_IMPORTED_FIRST = {"json_text_adapter": ("json_text_messages", "json_action_parser")}
"""The adapter imports both: loaded first, each on its own, a hang or a crash in one is said of that file."""


def main() -> None:  # pragma: no cover - runs in the sandbox; tests/test_verify*.py drive it there
    import sandbox_io  # type: ignore[import-not-found]  # copied beside this file in the sandbox

    # kept before learner code can replace them
    send_part, send, receive, reap = sandbox_io.send_part, sandbox_io.send, sandbox_io.receive, sandbox_io.reap
    package = str(sandbox_io.read_payload()["package"])
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.stdin = io.StringIO("")
    guard = _ReferenceGuard(package)
    sys.meta_path.insert(0, guard)
    directory = os.path.abspath(package)
    sys.modules[package] = package_module(package, directory)
    modules: dict[str, types.ModuleType | None] = {}
    # A file's import starts from the interpreter's own recursion limit and its checks run with the limit its import
    # left: a sibling's ``sys.setrecursionlimit`` (one interpreter runs all three files) is no fault of this file's.
    set_limit, pristine_limit, limits = sys.setrecursionlimit, sys.getrecursionlimit(), {}

    def ask(request: dict[str, Any]) -> Any:
        send_part(request)
        return receive()

    def observed(run: Callable[[], dict[str, Any]], file: str) -> dict[str, Any]:
        """What ``run`` returned, with what it printed and which reference modules ``file`` tried to import."""
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            result = run()
        return {**result, "printed": buffer.getvalue()[:200], "reference_imports": guard.unsaid(file)}

    def load(file: str) -> types.ModuleType | None:
        if not os.path.isfile(os.path.join(directory, f"{file}.py")):
            send_part({"done": f"load:{file}", "missing": True})
            return None
        loaded: list[types.ModuleType] = []

        def imported() -> dict[str, Any]:
            try:
                loaded.append(importlib.import_module(f"{package}.{file}"))
            except BaseException as raised:  # learner code: anything may come out, even SystemExit
                return {"error": describe_error(raised, directory)}
            return {"error": None}

        set_limit(pristine_limit)
        send_part({"start": f"load:{file}"})
        send_part({"done": f"load:{file}", **observed(imported, file)})
        limits[file] = sys.getrecursionlimit()
        return loaded[0] if loaded else None

    def run_item(item: dict[str, Any]) -> None:
        for file in (*_IMPORTED_FIRST.get(item["file"], ()), item["file"]):
            if file not in modules:
                modules[file] = load(file)
        module = modules[item["file"]]
        set_limit(limits.get(item["file"], pristine_limit))
        if module is None:
            send_part({"done": item["id"], "not_run": True})
        else:
            send_part({"start": item["id"]})
            result = observed(lambda: run_probe(module, item["probe"], directory, ask), item["file"])
            send_part({"done": item["id"], "result": result})

    while True:
        send_part({"next": True})
        request = receive()  # the parent fenced before answering: nothing of the last step lives on
        reap()
        probes = request.get("probes") if isinstance(request, dict) else None
        if not probes:
            break
        for item in probes:
            run_item(item)
    send({"finished": True})
    os._exit(0)
