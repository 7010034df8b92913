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

import functools
import importlib
import os
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
    for target in targets:
        module_name, _, attribute = target.partition(":")
        original = getattr(importlib.import_module(module_name), attribute)
        for module in list(sys.modules.values()):
            if getattr(module, attribute, None) is original:
                setattr(module, attribute, lambda value: value)


def _load_answers(sources: list[str]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__", "display": lambda *args, **kwargs: None}
    for number, source in enumerate(sources, start=1):
        try:
            exec(compile(source, f"<answer cell {number}>", "exec"), namespace)  # the point of this child
        except BaseException:  # a cell that raises stops only itself, as in a notebook
            continue
    return namespace


def _load_folder(folder: str) -> types.ModuleType:
    """The learner's folder as the package ``my_json_text``, without running its ``__init__.py``."""
    package = types.ModuleType("my_json_text")
    package.__path__ = [folder]
    sys.modules["my_json_text"] = package
    return package


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


def _outcome(run: Callable[[], Any], encode: Callable[[Any], Any]) -> dict[str, Any]:
    try:
        return {"returned": encode(run())}
    except BaseException as error:  # everything the learner's code raises is data for the judge
        return {"raised": encode(error)}


class _Child:
    def __init__(self, config: dict[str, Any]) -> None:
        from codeagent_lite.workbook import wire

        self.wire = wire
        self.encode = functools.partial(wire.encode, caps=wire.GRADER_CAPS)
        self.mode = str(config["mode"])
        self.classes = _classes(self.mode)
        self.named = {klass.__name__: klass for klass in self.classes.values()}
        self.namespace: dict[str, Any] = {}
        self.lent_error: BaseException = KeyError("nothing lent yet")
        if self.mode == "answers":
            _sabotage([str(target) for target in config.get("sabotage", [])])
            self.namespace = _load_answers([str(source) for source in config["sources"]])
        else:
            _load_folder(os.path.abspath(str(config["folder"])))

    def decode(self, data: Any) -> Any:
        return self.wire.decode(data, self.classes)

    def target(self, name: str) -> Any:
        if self.mode == "answers":
            return self.namespace[name]
        file, _, attribute = name.partition(".")
        return getattr(importlib.import_module(f"my_json_text.{file}"), attribute)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        operation = request.get("op")
        encode = self.encode
        if operation == "value":
            return _outcome(lambda: self.target(str(request["target"])), encode)
        if operation == "call":
            args = [self.decode(arg) for arg in request.get("args", [])]
            return _outcome(lambda: self.target(str(request["target"]))(*args), encode)
        if operation == "load":
            return _outcome(lambda: importlib.import_module(f"my_json_text.{request['target']}") and None, encode)
        if operation == "adapter":
            return self.adapter(request)
        if operation == "lent_adapter":
            return self.lent_adapter(request)
        return {"raised": encode(ValueError(f"unknown request {operation!r}"))}

    def adapter(self, request: dict[str, Any]) -> dict[str, Any]:
        """Exercise 4: the learner's adapter class on a scripted provider, and what the provider was asked."""
        provider = self.named["ScriptedProvider"]([self.decode(reply) for reply in request["replies"]])
        args = [self.decode(arg) for arg in request.get("args", [])]
        result = _outcome(lambda: self.target(str(request["target"]))(provider).complete(*args), self.encode)
        result["calls"] = self.encode(list(provider.calls))
        return result

    def lent_adapter(self, request: dict[str, Any]) -> dict[str, Any]:
        """Step 2: the learner's adapter with a parser that refuses (or has a bug) and an empty encoder."""
        self.lent_error = self.decode(request["error"])

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

        return _outcome(complete, self.encode)


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
