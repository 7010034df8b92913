"""The program the outside judge runs in a fresh sandboxed process: the learner's code, and nothing that judges.

Run by ``sandbox.SandboxSession``. Its payload says what to load: the answer cells of notebook 05 (``"mode":
"answers"``, their source run in order in one namespace, as a kernel would), or a learner's ``my_json_text/`` folder
(``"mode": "folder"``). Then each request (``sandbox_io.receive``) asks for one thing (call a function, read a
value, drive an adapter) and the answer (``sandbox_io.send_part``) says what came back or what was raised, as plain
data (``workbook.wire``, the codec verify's probe uses too). The verdict is made by the parent, which never sees the
learner's objects, only this data.

The learner's code can rewrite anything in this process, this file included: all it can change is the data it
sends, and the parent treats that as untrusted input (size cap, deadline, a ✘ when it is garbage).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import types
from collections.abc import Callable
from typing import Any


def _classes(mode: str) -> dict[str, Any]:
    """The package classes this child may build from the parent's arguments, by qualified name."""
    from codeagent_lite import kernel_types, model_adapter
    from codeagent_lite.workbook import wire

    modules: list[Any] = [kernel_types, model_adapter]
    if mode == "answers":
        from codeagent_lite import json_text_adapter, json_text_messages, scripted_provider
        from codeagent_lite.workbook import exercise_checks

        modules += [json_text_adapter, json_text_messages, scripted_provider, exercise_checks]
    return wire.classes_of(*modules)


def _sabotage(targets: list[str]) -> None:
    """Replace each ``module:function`` of the package, wherever it is held, by one that lets everything through.

    A learner who hands the exercise to the package then gets wrong answers, which the parent sees; honest work
    does not notice (exercise 2's own-work trap).
    """
    sabotaged = set()
    for target in targets:
        module_name, _, attribute = target.partition(":")
        original = getattr(importlib.import_module(module_name), attribute)
        for module in list(sys.modules.values()):
            if getattr(module, attribute, None) is original:
                setattr(module, attribute, lambda value: value)
                sabotaged.add(module.__name__)
    sys.meta_path.insert(0, _NoFreshCopy(frozenset(sabotaged)))


class _NoFreshCopy:
    """A finder that refuses to load the sabotaged modules again: ``importlib.reload`` (or a fresh import after
    ``del sys.modules[...]``) would bring the real function back and undo the trap."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in self.names:
            raise ImportError(f"{name} cannot be loaded again while its exercise is judged")


CELL_SECONDS = 2.0
"""How long one answer cell may run while loading (honest ones define functions, in milliseconds): a cell that
never ends stops there, as nbgrader's kernel interrupts it, and the later cells still load within the first
request's deadline."""


def _cell_overran(*_: object) -> None:
    raise TimeoutError(f"the cell ran longer than {CELL_SECONDS} s")


def _load_answers(sources: list[str]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__", "display": lambda *args, **kwargs: None}
    for number, source in enumerate(sources, start=1):
        signal.signal(signal.SIGALRM, _cell_overran)
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, CELL_SECONDS)
                exec(compile(source, f"<answer cell {number}>", "exec"), namespace)  # the point of this child
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException:  # a cell that raises or overruns stops only itself, as in a notebook
            continue
    return namespace


def _lend(file: str, **names: Any) -> None:
    """Stand in for one of the learner's files: step 2 judges the adapter alone, with what the check lends it."""
    module = types.ModuleType(f"my_json_text.{file}")
    module.__dict__.update(names)
    sys.modules[module.__name__] = module


class _Provider:
    """The text provider step 2's adapter is handed: one reply of the parent's choosing."""

    def __init__(self, response_class: Any, usage: list[int]) -> None:
        self._response = response_class(text="[]", input_tokens=usage[0], output_tokens=usage[1])

    def complete(self, *, messages: Any, tools: Any, max_output_tokens: Any) -> Any:
        return self._response


class _Child:
    def __init__(self, config: dict[str, Any]) -> None:
        from codeagent_lite.workbook import wire

        self.wire = wire
        self.mode = str(config["mode"])
        self.classes = _classes(self.mode)
        self.named = {klass.__name__: klass for klass in self.classes.values()}
        self.namespace: dict[str, Any] = {}
        self.lent_error: BaseException = KeyError("nothing lent yet")
        if self.mode == "answers":
            _sabotage([str(target) for target in config.get("sabotage", [])])
            self.namespace = _load_answers([str(source) for source in config["sources"]])
        else:  # the learner's folder as the package my_json_text, without running its __init__.py
            package = types.ModuleType("my_json_text")
            package.__path__ = [os.path.abspath(str(config["folder"]))]
            sys.modules["my_json_text"] = package

    def encode(self, value: Any) -> Any:
        return self.wire.encode(value, caps=self.wire.GRADER_CAPS)

    def outcome(self, run: Callable[[], Any]) -> dict[str, Any]:
        try:
            return {"returned": self.encode(run())}
        except BaseException as error:  # everything the learner's code raises is data for the judge
            return {"raised": self.encode(error)}

    def target(self, name: str) -> Any:
        if self.mode == "answers":
            return self.namespace[name]
        file, _, attribute = name.partition(".")
        return getattr(importlib.import_module(f"my_json_text.{file}"), attribute)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        operation, target = request.get("op"), str(request.get("target"))
        args = [self.wire.decode(arg, self.classes) for arg in request.get("args", [])]
        if operation == "value":
            return self.outcome(lambda: self.target(target))
        if operation == "call":
            return self.outcome(lambda: self.target(target)(*args))
        if operation == "load":
            return self.outcome(lambda: importlib.import_module(f"my_json_text.{target}") and None)
        if operation == "adapter":  # exercise 4: the learner's class on a scripted provider, and what it was asked
            replies = [self.wire.decode(reply, self.classes) for reply in request["replies"]]
            provider = self.named["ScriptedProvider"](replies)
            result = self.outcome(lambda: self.target(target)(provider).complete(*args))
            return {**result, "calls": self.encode(list(provider.calls))}
        if operation == "lent_adapter":
            return self.lent_adapter(request)
        return {"raised": self.encode(ValueError(f"unknown request {operation!r}"))}

    def lent_adapter(self, request: dict[str, Any]) -> dict[str, Any]:
        """Step 2: the learner's adapter with a parser that raises the parent's error and an empty encoder."""
        self.lent_error = self.wire.decode(request["error"], self.classes)

        def parser(raw_text: str) -> Any:
            raise self.lent_error

        if "my_json_text.json_action_parser" not in sys.modules:
            _lend("json_action_parser", parse_json_action=parser)
            _lend("json_text_messages", build_provider_messages=lambda history: [])

        def complete() -> Any:
            adapter_file = importlib.import_module("my_json_text.json_text_adapter")
            adapter = adapter_file.JsonTextModelAdapter(_Provider(adapter_file.ProviderResponse, request["usage"]))
            history = [self.named["Message"](self.named["MessageRole"].USER, "hi")]
            return adapter.complete(history, [], self.named["ModelCallBudget"](max_output_tokens=16))

        return self.outcome(complete)


def main() -> None:
    import sandbox_io  # type: ignore[import-not-found]  # copied beside this file in the sandbox

    # kept before learner code can replace them
    receive, answer = sandbox_io.receive, sandbox_io.send_part
    config = sandbox_io.read_payload()
    os.environ["CAL_LANG"] = str(config.get("language", "en"))
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 (kept open for the process's life)
    child = _Child(config)
    while (request := receive()) is not None:
        try:
            answer(child.answer(request))
        except BaseException as error:  # a malformed request or an unreadable value: say so, keep serving
            answer({"raised": child.encode(RuntimeError(f"the child could not answer: {error!r}"[:300]))})


if __name__ == "__main__":
    main()
