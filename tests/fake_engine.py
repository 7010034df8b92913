"""A stand-in for the local model's engine process, for tests that must not need llama.cpp.

Usage: python tests/fake_engine.py PORT BEHAVIOUR

It serves ``GET /v1/models`` like a real engine, and then, by BEHAVIOUR:

- ``echo``: every ``POST /v1/completions`` is answered with a completion whose text is the
  request body it received (so a test sees exactly what the client sent);
- ``sigill-on-completion`` / ``sigsegv-on-completion`` / ``sigkill-on-completion``: the first
  completion request kills the process with that signal, as a native crash would;
- ``sigill-at-start``: dies with SIGILL before it serves anything;
- ``stop-on-completion``: the first completion request stops the process (SIGSTOP), as Ctrl-Z in its
  terminal would, with the request unanswered; once resumed it answers that one and every later one.

Core dumps are switched off first, so a "crash" leaves no core file behind.
"""

from __future__ import annotations

import http.server
import json
import os
import resource
import signal
import sys

SIGNALS = {"sigill": signal.SIGILL, "sigsegv": signal.SIGSEGV, "sigkill": signal.SIGKILL}


def die(name: str) -> None:
    number = SIGNALS[name]
    if number != signal.SIGKILL:
        signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)


def main() -> None:
    port, behaviour = int(sys.argv[1]), sys.argv[2]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if behaviour == "sigill-at-start":
        print("loading the model...", flush=True)
        die("sigill")

    stopped: list[bool] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def reply(self, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self.reply({"object": "list", "data": [{"id": "gemma-3-270m", "object": "model"}]})

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if behaviour == "stop-on-completion":
                if not stopped:
                    stopped.append(True)
                    os.kill(os.getpid(), signal.SIGSTOP)
            elif behaviour.endswith("-on-completion"):
                die(behaviour.split("-")[0])
            tokens = min(int(request.get("max_tokens", 12)), 12)
            self.reply(
                {
                    "object": "text_completion",
                    "choices": [{"index": 0, "text": json.dumps(request), "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 700, "completion_tokens": tokens, "total_tokens": 700 + tokens},
                }
            )

    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
