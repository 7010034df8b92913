"""Throughput of ``parse_json_action`` against plain ``json.loads`` on the same texts.

Run it from the repository root (5-15 s on a shared 2-core machine)::

    .venv/bin/python benchmarks/bench_parser.py

What it does: builds a realistic mix of model replies in memory, from ~100 B to ~1 MB
(valid tool calls and final answers, and invalid ones: fenced, prose before, cut off,
duplicate key, wrong type, missing field, raw control character), then times both
functions on every text in the same run (best of several repeats, ``time.perf_counter``).
``json.loads`` is wrapped in try/except for the invalid texts, as the parser's own
refusal is caught for them.

How to read it:

* the per-text table shows microseconds per call for each function and their ratio
  (parse / loads: 2.0 means the four layers cost twice a bare ``json.loads``);
* "per size" sums the times of every text of one size, so it is the throughput ratio
  at that size; "overall" gives the same over every text and the geometric mean of the
  per-text ratios (each text counts once, whatever its size), and "typical replies"
  the same mean over valid write_file calls and final answers; the aim is at most 3x;
* "time per byte" shows nanoseconds per byte of each valid text at 1 KB, 100 KB and
  1 MB: if the cost is linear, each row stays roughly flat as the size grows;
* "hostile 1 MB replies" are texts refused only at their end (NaN, 1e400, a duplicate key,
  nesting 101 deep, a lone escaped surrogate after a megabyte of valid JSON), which
  json.loads reads whole: the ratio is what strictness adds; the aim is at most 10x.

Where the time goes when the ratio is high (profiled with cProfile):

* small valid replies (~100 B): a fixed few microseconds against json.loads' ~2 µs: the
  hooks (a Python call per object and per number), the raw-text checks, layer 4, and
  ``ToolCall``'s own checks and deep copy of ``arguments`` (every ToolCall gets them);
* tool calls whose arguments hold thousands of small objects: the same hooks per object,
  plus the container walk that measures the decoded value's depth;
* invalid texts that json.loads rejects at their first characters (fenced, prose before,
  a raw control character early on): json.loads stops after a few bytes while the parser
  still reads the text once to say what it is (is it cut off, does a value follow?), so
  their ratio grows with the size; their cost per byte stays flat (linear).

The machine's other load moves single numbers by tens of percent; compare ratios
within one run, and run it twice before trusting a change.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from codeagent_lite.json_action_parser import parse_json_action
from codeagent_lite.model_adapter import InvalidModelOutputError

SIZES = {"100 B": 100, "1 KB": 1_000, "10 KB": 10_000, "100 KB": 100_000, "1 MB": 1_000_000}
MIN_REPEAT_SECONDS = 0.01  # each timed repeat runs the function enough times to last this long
REPEATS = 9
PER_BYTE_SIZES = ("1 KB", "100 KB", "1 MB")
TYPICAL_KINDS = ("tool_call write_file", "final_answer")

CODE_LINES = [
    "def read_config(path: str) -> dict[str, object]:",
    '    """Load the settings file; a missing file means defaults."""',
    "    try:",
    '        with open(path, encoding="utf-8") as handle:',
    "            return json.load(handle)",
    "    except FileNotFoundError:",
    '        return {"debug": False, "paths": ["src", "tests"], "retries": 3}',
    "",
    "class Cache:",
    "    def __init__(self) -> None:",
    "        self._items: dict[str, list[int]] = {}",
    '        self.pattern = re.compile(r"\\d+\\s*")',
    "",
]
PROSE = (
    "The file README.md describes the project. 这个项目是一个教学用的 Jupyter 工作簿，"
    'it follows the chapter "JSON 文本模型板块" step by step.\n'
    "Each layer of the parser refuses one kind of mistake and says where it is.\n"
)


def repeat_to(unit_lines: list[str] | str, size: int) -> str:
    """Repeat a unit of text until it reaches about ``size`` characters."""
    unit = "\n".join(unit_lines) + "\n" if isinstance(unit_lines, list) else unit_lines
    return (unit * (size // len(unit) + 1))[:size]


def write_file_call(payload_size: int, call_id: str = "call_7") -> dict[str, object]:
    return {
        "type": "tool_call",
        "call_id": call_id,
        "tool_name": "write_file",
        "arguments": {"path": "src/config.py", "content": repeat_to(CODE_LINES, payload_size)},
    }


def edit_call(payload_size: int) -> dict[str, object]:
    # Many small objects: the shape of a multi-edit tool call, heavy in brackets and short strings.
    edits = []
    while len(edits) * 60 < payload_size:
        i = len(edits)
        edits.append({"line": i + 1, "old": f"x = {i}", "new": f"x = {i + 1}  # 更新"})
    return {"type": "tool_call", "call_id": "call_9", "tool_name": "apply_edits", "arguments": {"edits": edits}}


def final_answer(payload_size: int) -> dict[str, object]:
    return {"type": "final_answer", "content": repeat_to(PROSE, payload_size)}


def dumps(value: object, *, pretty: bool = False) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2 if pretty else None)


def build_texts(size: int) -> list[tuple[str, bool, str]]:
    """(kind, is valid, text) for one target size; payloads are sized so each text is about ``size``."""
    payload = max(10, size - 90)
    call = dumps(write_file_call(payload))
    texts = [
        ("tool_call write_file", True, call),
        ("tool_call edits (many objects)", True, dumps(edit_call(payload), pretty=True)),
        ("final_answer", True, dumps(final_answer(payload))),
        ("fenced", False, "```json\n" + call + "\n```"),
        ("prose before", False, "Sure, here is the call: " + call),
        ("cut off", False, call[: max(1, len(call) * 9 // 10)]),
        ("duplicate key", False, call[:-2] + ',"path":"/etc/passwd"}}'),
        ("wrong type", False, call.replace('"tool_call"', '"Tool_Call"', 1)),
        ("missing field", False, call.replace('"call_id": "call_7", ', "", 1)),
        ("raw tab in string", False, call.replace('"content": "', '"content": "\t', 1)),
    ]
    return texts


HOSTILE_SIZE = 1_000_000


def hostile_texts() -> list[tuple[str, str]]:
    """1 MB replies an attacker would send, each refused only at its end, so json.loads reads them whole.

    json.loads accepts every one of them (NaN, a duplicate key, 1e400, a lone escaped surrogate), so
    the ratio says what the strict layer adds to reading the text; issue 18's aim: at most 10x.
    """
    numbers = ",".join(str(i) for i in range(HOSTILE_SIZE // 7))
    objects = ",".join(f'{{"k":{i},"v":"x"}}' for i in range(HOSTILE_SIZE // 16))
    call = '{"type":"tool_call","call_id":"c","tool_name":"t","arguments":{"a":[%s]}}'
    nested = ",".join(["[" * 60 + "1" + "]" * 60] * (HOSTILE_SIZE // 122))
    return [
        ("numbers, then NaN", call % (numbers + ",NaN")),
        ("numbers, then 1e400", call % (numbers + ",1e400")),
        ("objects, then a duplicate key", call % (objects + ',{"k":1,"k":2}')),
        ("60-deep arrays side by side, then 101 deep", call % (nested + "," + "[" * 101 + "]" * 101)),
        ("escaped pairs, then a lone surrogate", call % ('"' + "\\ud83d\\ude00" * (HOSTILE_SIZE // 12) + '\\ud800"')),
        (
            "long keys, one object, then a duplicate",
            call % ("{" + ",".join(f'"key_{i:08d}":{i}' for i in range(HOSTILE_SIZE // 20)) + ',"key_00000001":0}'),
        ),
        ("a valid reply, then a second one", call % numbers + call % "1"),
    ]


def parse_or_refuse(text: str) -> object:
    try:
        return parse_json_action(text)
    except InvalidModelOutputError as error:
        return error


def loads_or_fail(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError as error:
        return error


def _loops_for(function: Callable[[str], object], text: str) -> int:
    start = time.perf_counter()
    function(text)
    once = time.perf_counter() - start
    return max(1, math.ceil(MIN_REPEAT_SECONDS / max(once, 1e-7)))


def best_times(first: Callable[[str], object], second: Callable[[str], object], text: str) -> tuple[float, float]:
    """Seconds per call of each function: best of REPEATS, the two timed in turn.

    Taking turns means both see the same load from the machine's other work, so their
    ratio stays meaningful on a busy shared machine even when single numbers do not.
    """
    loops = (_loops_for(first, text), _loops_for(second, text))
    best = [math.inf, math.inf]
    for _ in range(REPEATS):
        for index, function in enumerate((first, second)):
            start = time.perf_counter()
            for _ in range(loops[index]):
                function(text)
            best[index] = min(best[index], (time.perf_counter() - start) / loops[index])
    return best[0], best[1]


@dataclass(frozen=True)
class Measurement:
    size_label: str
    kind: str
    valid: bool
    size_bytes: int
    parse_seconds: float
    loads_seconds: float

    @property
    def ratio(self) -> float:
        return self.parse_seconds / self.loads_seconds


def check_the_mix(texts: list[tuple[str, bool, str]]) -> None:
    # Guard the benchmark itself: a "valid" text the parser refuses would time the wrong path.
    for kind, valid, text in texts:
        accepted = not isinstance(parse_or_refuse(text), InvalidModelOutputError)
        if accepted != valid:
            raise SystemExit(f"benchmark text {kind!r} was expected to be {'valid' if valid else 'invalid'}")


def main() -> None:
    started = time.perf_counter()
    measurements: list[Measurement] = []
    print(f"{'size':>7} {'kind':<31} {'bytes':>9} {'parse µs':>11} {'loads µs':>10} {'ratio':>6}")
    for label, size in SIZES.items():
        texts = build_texts(size)
        check_the_mix(texts)
        for kind, valid, text in texts:
            parse_seconds, loads_seconds = best_times(parse_or_refuse, loads_or_fail, text)
            m = Measurement(label, kind, valid, len(text.encode("utf-8")), parse_seconds, loads_seconds)
            measurements.append(m)
            print(
                f"{label:>7} {kind:<31} {m.size_bytes:>9} {parse_seconds * 1e6:>11.1f} "
                f"{loads_seconds * 1e6:>10.1f} {m.ratio:>6.2f}"
            )

    print("\nper size (parse time / loads time, summed over the texts of that size)")
    for label in SIZES:
        group = [m for m in measurements if m.size_label == label]
        valid = [m for m in group if m.valid]
        print(
            f"  {label:>7}: all {ratio_of_sums(group):5.2f}x   valid only {ratio_of_sums(valid):5.2f}x   "
            f"geometric mean {geometric_mean(group):5.2f}x"
        )
    print(
        f"\noverall: {ratio_of_sums(measurements):.2f}x summed time, "
        f"{geometric_mean(measurements):.2f}x geometric mean of per-text ratios "
        f"(valid {geometric_mean([m for m in measurements if m.valid]):.2f}x, "
        f"invalid {geometric_mean([m for m in measurements if not m.valid]):.2f}x)"
    )

    typical = [m for m in measurements if m.kind in TYPICAL_KINDS and m.size_label != "100 B"]
    tiny = [m for m in measurements if m.kind in TYPICAL_KINDS and m.size_label == "100 B"]
    print(
        f"typical replies ({' and '.join(TYPICAL_KINDS)}): {geometric_mean(typical):.2f}x from 1 KB to 1 MB, "
        f"{geometric_mean(tiny):.2f}x at 100 B (geometric means; aim: at most 3x)"
    )

    print("\ntime per byte of each valid text (ns/byte, parse_json_action / json.loads; flat across a row = linear)")
    print(f"  {'kind':<31}" + "".join(f"{label:>17}" for label in PER_BYTE_SIZES))
    for kind in dict.fromkeys(m.kind for m in measurements if m.valid):
        cells = []
        for label in PER_BYTE_SIZES:
            (m,) = [m for m in measurements if m.size_label == label and m.kind == kind]
            cells.append(f"{m.parse_seconds / m.size_bytes * 1e9:7.2f} / {m.loads_seconds / m.size_bytes * 1e9:5.2f}")
        print(f"  {kind:<31}" + "".join(f"{cell:>17}" for cell in cells))
    print("\nhostile 1 MB replies (refused at their end; json.loads accepts or reads them whole; aim: at most 10x)")
    hostile = []
    for kind, text in hostile_texts():
        if not isinstance(parse_or_refuse(text), InvalidModelOutputError):
            raise SystemExit(f"hostile text {kind!r} was accepted")
        parse_seconds, loads_seconds = best_times(parse_or_refuse, loads_or_fail, text)
        hostile.append(parse_seconds / loads_seconds)
        times = f"{parse_seconds * 1e3:>8.1f} ms {loads_seconds * 1e3:>7.1f} ms"
        print(f"  {kind:<44} {len(text):>9} B {times} {hostile[-1]:>6.2f}x")
    print(f"  worst {max(hostile):.2f}x, geometric mean {statistics.geometric_mean(hostile):.2f}x")
    print(f"\n(benchmark ran in {time.perf_counter() - started:.0f} s)")


def ratio_of_sums(group: list[Measurement]) -> float:
    return sum(m.parse_seconds for m in group) / sum(m.loads_seconds for m in group)


def geometric_mean(group: list[Measurement]) -> float:
    return statistics.geometric_mean([m.ratio for m in group])


if __name__ == "__main__":
    main()
