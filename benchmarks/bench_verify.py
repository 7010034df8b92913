"""verify on the solutions, all steps: this tree against the commit before the sandbox, in one run.

Run it from the repository root (about a minute on a shared 2-core machine)::

    make bench-verify        # or: .venv/bin/python benchmarks/bench_verify.py [--runs N]

What it does: ``git worktree add`` of the baseline commit (6aae0ff, before verify ran its
probes in a sandbox) into a temporary folder; then, alternating old and new so that load on
the machine hits both alike, runs ``verify("solutions/my_json_text")`` N times for each, each
time in a fresh interpreter with that tree first on ``sys.path``, and times the ``verify``
call only (as a learner's notebook would: the import is paid once per kernel). It prints the
median of each and their ratio; the aim is at most 1.5x. The worktree is removed at the end.

Why the new code can stay close: one sandbox session for all the steps (a fresh one only after a
hang or a crash), a fresh ``python -I -S`` under bubblewrap with our own modules precompiled,
against the old code's fork server and one child.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "6aae0ff"
TIMED = (
    "import json, sys, time\n"
    "from codeagent_lite.workbook.verify import verify\n"
    "started = time.perf_counter()\n"
    "report = verify(sys.argv[1])\n"
    "print(json.dumps({'seconds': time.perf_counter() - started, 'passed': report.passed, "
    "'total': len(report.results)}))\n"
)


def _once(tree: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", TIMED, str(ROOT / "solutions" / "my_json_text")],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "CAL_LANG": "en"},
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["passed"] != result["total"]:
        raise SystemExit(f"{tree}: the solutions pass {result['passed']} of {result['total']} checks")
    return float(result["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each tree (default 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as temporary:
        old = Path(temporary) / "baseline"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), BASELINE], check=True, capture_output=True
        )
        try:
            times: dict[str, list[float]] = {"old": [], "new": []}
            _once(old), _once(ROOT)  # warm the file cache for both
            for _ in range(args.runs):
                times["old"].append(_once(old))
                times["new"].append(_once(ROOT))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    old_median, new_median = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"verify solutions/my_json_text, all steps, {args.runs} runs each (median, seconds)")
    print(f"  baseline {BASELINE}: {old_median:.3f}")
    print(f"  this tree       : {new_median:.3f}")
    print(f"  ratio new/old   : {new_median / old_median:.2f}x (aim: at most 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
