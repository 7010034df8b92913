"""Build the local model's engine (llama-cpp-python) without holding anything else up.

Usage: python scripts/local_engine.py start | build [--nice] [--no-wait] [--optional] | status [--json]
                                     | start-server | build-server [--nice] | smoke-test [--llama-server]

- ``start``   (``make lab``): start ``build`` in the background, detached, and return at once.
              Always exits 0: the lab must open whatever happens to the engine.
- ``build``   (``make local``, ``make test``): install the ``local`` packages into this
              interpreter's environment, logging to the build log, with a progress line every
              15 s. Waits for a build that is already running, unless ``--no-wait``. Exits with
              pip's code, or 0 with ``--optional`` (Binder's postBuild: the lab must not depend
              on the compile). ``--nice`` lowers its priority so JupyterLab stays responsive.
- ``status``  print the engine's state and what to do next; exit 0 when ready, 1 otherwise.
- ``start-server`` / ``build-server`` (``make local-server``): the same two for llama.cpp's own
              ``llama-server``, which a class shares; optional, one learner never needs it.
- ``smoke-test`` ask the engine (or the llama-server built here) one token in a separate
              process, as the builders do; exit 0 when that worked.

The builders are ``engine_build.py`` beside this script; the state they write is read by
``codeagent_lite.providers.local_engine``, so notebook 06 and ``run --provider local`` see it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # engine_build beside it, even under PYTHONSAFEPATH

from engine_build import (
    build_engine,
    build_llama_server,
    smoke_test_engine,
    start_background_build,
    start_background_server_build,
)

from codeagent_lite.providers.llama_server_build import llama_server_build
from codeagent_lite.providers.local_engine import engine_status
from codeagent_lite.workbook.engine_words import engine_report_line, engine_summary, progress_text, server_summary


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("start", help="start the build in the background")
    build = commands.add_parser("build", help="build now, in the foreground")
    build.add_argument("--nice", action="store_true", help="run at low priority")
    build.add_argument("--no-wait", action="store_true", help="return at once if a build is already running")
    build.add_argument("--optional", action="store_true", help="exit 0 even when the build fails")
    commands.add_parser("start-server", help="start the llama-server build in the background")
    build_server = commands.add_parser("build-server", help="build llama-server now, in the foreground")
    build_server.add_argument("--nice", action="store_true", help="run at low priority")
    smoke = commands.add_parser("smoke-test", help="ask one token in a separate engine, then exit")
    smoke.add_argument("--llama-server", action="store_true", help="of the llama-server built here")
    status = commands.add_parser("status", help="print the engine's state")
    status.add_argument("--json", action="store_true", help="print the state as one JSON object")
    args = parser.parse_args(argv)

    if args.command == "start":  # never blocks the lab: a build that cannot start is a status, not an error
        command = [sys.executable, str(Path(__file__).resolve()), "build", "--nice", "--no-wait"]
        print(engine_summary(start_background_build(command)))
        return 0
    if args.command == "start-server":
        command = [sys.executable, str(Path(__file__).resolve()), "build-server", "--nice"]
        print(server_summary(start_background_server_build(command)))  # never blocks the lab
        return 0
    if args.command == "smoke-test":
        failure = smoke_test_engine(**({"backend": "llama-server"} if args.llama_server else {}))
        print(f"smoke test: failed: {failure}" if failure else "smoke test: ok (one token)", flush=True)
        return 0 if failure is None else 1
    if args.command in ("build", "build-server") and args.nice and hasattr(os, "nice"):
        os.nice(10)
    if args.command == "build-server":
        return build_llama_server(tell=lambda build, phase: print(server_summary(build, phase), flush=True))
    if args.command == "build":
        code = build_engine(report=sys.stdout, wait_for_running=not args.no_wait, tell=engine_report_line)
        return 0 if args.optional else code
    found = engine_status()
    if args.json:
        progress = found.progress
        fields = {
            "state": found.state.value,
            "missing": list(found.missing),
            "reason": None if found.reason is None else found.reason.as_json(),
            "hint": None if found.hint is None else found.hint.as_json(),
            "summary": engine_summary(found),
            "progress": None if progress is None else progress_text(progress),
            "log": str(found.log_path),
            "llama-server": server_summary(llama_server_build()),
        }
        print(json.dumps(fields))
    else:
        print(engine_report_line(found))
        print(server_summary(llama_server_build()))
    return 0 if found.ready else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
