"""The command line against hostile and careless input: only exit 0, 1 or 2, never a traceback,
never a hang, never a raw escape sequence or a key on the terminal.

Regressions first (each one input that used to go wrong), then property tests over
arbitrary bytes on standard input, in an argument, in a ``--file`` and in a script.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loopback_server import serving

from codeagent_lite import cli
from codeagent_lite.cli import EXIT_REJECTED, EXIT_USAGE, EXIT_VALID, main
from codeagent_lite.display import printable

REPO = Path(__file__).resolve().parents[1]
VALID = '{"type":"final_answer","content":"42"}'
EXIT_CODES = {EXIT_VALID, EXIT_REJECTED, EXIT_USAGE}
ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x9b"


def module(
    *args: str | bytes, stdin: bytes | None = None, env: dict[str, str] | None = None, **options: object
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "codeagent_lite", *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
        **options,  # type: ignore[arg-type]
    )


def assert_clean(result: subprocess.CompletedProcess[bytes]) -> None:
    """Exit 0, 1 or 2, no traceback, and no raw control character in anything printed."""
    assert result.returncode in EXIT_CODES, result.stderr
    for stream in (result.stdout, result.stderr):
        text = stream.decode("utf-8", "backslashreplace")
        assert "Traceback" not in text
        assert printable(text) == text, text


def in_process(argv: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_err = sys.stderr
    sys.stderr = err
    try:
        code = main(argv, stdin=io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"), stdout=out)
    finally:
        sys.stderr = old_err
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("buy milk\n", encoding="utf-8")
    return root


def script(tmp_path: Path, replies: list[object]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    return str(path)


# --------------------------------------------------------------------------- crashes


def test_check_with_standard_input_closed_exits_2() -> None:
    result = module("check", preexec_fn=lambda: os.close(0))
    assert_clean(result)
    assert result.returncode == EXIT_USAGE
    assert b"standard input is closed" in result.stderr


def test_output_closed_early_ends_quietly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "codeagent_lite", "check", "[" * 5000],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # like `| head -0`: the reader is gone before anything is written
    error = process.stderr.read()
    assert process.wait(timeout=60) == EXIT_USAGE
    assert b"Traceback" not in error and b"BrokenPipe" not in error


def test_run_with_an_absurdly_nested_script_exits_2(tmp_path: Path, workspace: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    code, out, err = in_process(
        ["run", "--provider", "scripted", "--script", str(path), "--workspace", str(workspace), "Go"]
    )
    assert code == EXIT_USAGE and out == ""
    assert "nests too deeply" in err


# --------------------------------------------------------------------------- hangs and memory


def test_check_file_dev_zero_is_bounded() -> None:
    started = time.monotonic()
    code, _, err = in_process(["check", "--file", "/dev/zero"])
    assert code == EXIT_USAGE and f"longer than {cli.MAX_INPUT_BYTES} bytes" in err
    assert time.monotonic() - started < 20


def test_endless_standard_input_is_bounded() -> None:
    result = module("check", stdin=b"y\n" * (cli.MAX_INPUT_BYTES // 2 + 10))
    assert_clean(result)
    assert result.returncode == EXIT_USAGE and b"longer than" in result.stderr


def test_a_fifo_without_writer_does_not_block_forever(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "reply.fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(cli, "FILE_WAIT_SECONDS", 0.5)
    started = time.monotonic()
    code, _, err = in_process(["check", "--file", str(fifo)])
    assert code == EXIT_USAGE and "within 0.5 s" in err
    assert time.monotonic() - started < 5


def test_a_fifo_with_a_writer_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "reply.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w", encoding="utf-8") as handle:
            handle.write(VALID)

    writer = threading.Thread(target=write)
    writer.start()
    code, out, _ = in_process(["check", "--file", str(fifo)])
    writer.join(timeout=10)
    assert code == EXIT_VALID and "FinalAnswer(content='42')" in out


def _check_from_pipe(read_end: int) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_err, sys.stderr = sys.stderr, err
    try:
        with os.fdopen(read_end, "r", encoding="utf-8") as stdin:
            code = main(["check", "-"], stdin=stdin, stdout=out)
    finally:
        sys.stderr = old_err
    return code, out.getvalue(), err.getvalue()


def test_a_non_blocking_standard_input_is_waited_for_until_its_end() -> None:
    """Read at once, a pipe left non-blocking crashed (no data yet) or was judged half-written."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    half = len(VALID) // 2

    def write_slowly() -> None:
        os.write(write_end, VALID[:half].encode())
        time.sleep(0.5)
        os.write(write_end, VALID[half:].encode())
        os.close(write_end)

    writer = threading.Thread(target=write_slowly)
    writer.start()
    code, out, err = _check_from_pipe(read_end)
    writer.join(timeout=10)
    assert code == EXIT_VALID and "FinalAnswer(content='42')" in out, err


def test_a_silent_standard_input_is_waited_for_a_bounded_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "FILE_WAIT_SECONDS", 0.5)
    read_end, write_end = os.pipe()
    started = time.monotonic()
    try:
        code, _, err = _check_from_pipe(read_end)
    finally:
        os.close(write_end)
    assert code == EXIT_USAGE and "standard input delivered no end of text within 0.5 s" in err, err
    assert time.monotonic() - started < 5


# --------------------------------------------------------------------------- wrong verdicts

INVALID_UTF8 = b'{"type":"final_answer","content":"caf\xe9"}'


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_invalid_utf8_is_refused_the_same_way_on_every_path(tmp_path: Path, locale: str) -> None:
    env = {"LC_ALL": locale, "LANG": locale}
    path = tmp_path / "reply.txt"
    path.write_bytes(INVALID_UTF8)
    results = [
        module("check", stdin=INVALID_UTF8, env=env),
        module("check", "-", stdin=INVALID_UTF8, env=env),
        module(b"check", INVALID_UTF8, env=env),
        module("check", "--file", str(path), env=env),
    ]
    for result in results:
        assert_clean(result)
        assert result.returncode == EXIT_USAGE
        assert b"is not valid UTF-8: byte 38 is 0xe9" in result.stderr


def test_an_invalid_task_argument_is_refused(tmp_path: Path, workspace: Path) -> None:
    result = module(
        "run", "--provider", "scripted", "--script", script(tmp_path, [VALID]), "--workspace", str(workspace), b"t\xff"
    )
    assert_clean(result)
    assert result.returncode == EXIT_USAGE and b"the task is not valid UTF-8" in result.stderr


# --------------------------------------------------------------------------- terminal injection and secrets


def test_run_prints_replies_results_and_names_escaped(tmp_path: Path, workspace: Path) -> None:
    (workspace / f"evil{ESCAPES}.txt").write_text(f"file text {ESCAPES}", encoding="utf-8")
    replies: list[object] = [
        {"type": "tool_call", "call_id": "c1", "tool_name": "list_files", "arguments": {}},
        {"type": "tool_call", "call_id": "c2", "tool_name": "read_file", "arguments": {"path": f"evil{ESCAPES}.txt"}},
        f"not json {ESCAPES}",
        {"type": "final_answer", "content": f"done {ESCAPES}"},
    ]
    result = module(
        "run", "--provider", "scripted", "--script", script(tmp_path, replies), "--workspace", str(workspace), "Go"
    )
    assert_clean(result)
    assert result.returncode == EXIT_VALID
    assert b"\\x1b[2J" in result.stdout and b"\x1b" not in result.stdout


def test_argparse_errors_are_escaped_too() -> None:
    result = module("check", VALID, f"--bogus{ESCAPES}")
    assert_clean(result)
    assert result.returncode == EXIT_USAGE


def test_credentials_in_the_base_url_are_not_printed(monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    pytest.importorskip("openai")
    url = "http://learner:hunter2-password@127.0.0.1:9/v1"  # refused before any request
    code, out, err = in_process(
        [
            "run",
            "--provider",
            "openai",
            "--base-url",
            url,
            "--model",
            "m",
            "--no-api-key",
            "--workspace",
            str(workspace),
            "Go",
        ]
    )
    assert code == EXIT_USAGE
    assert "hunter2-password" not in out + err and "learner" not in out + err
    assert "must not contain a user name or password" in err and "http://***@127.0.0.1:9/v1" in err


def test_a_key_given_to_api_key_env_is_not_echoed(workspace: Path) -> None:
    pytest.importorskip("openai")
    key = "sk-proj-Secret-0123456789"
    code, out, err = in_process(
        [
            "run",
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--api-key-env",
            key,
            "--workspace",
            str(workspace),
            "Go",
        ]
    )
    assert code == EXIT_USAGE
    assert key not in out + err and "may be the key itself" in err


def test_absurd_token_counts_from_a_server_end_run_cleanly(workspace: Path) -> None:
    """Two 4300-digit counts used to kill run with "Exceeds the limit (4300 digits)" when it summed and printed them."""
    pytest.importorskip("openai")
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    huge = "9" * 4300
    body = (
        '{"choices": [{"message": {"content": "{\\"type\\":\\"final_answer\\",\\"content\\":\\"x\\"}"}, '
        f'"finish_reason": "stop"}}], "usage": {{"prompt_tokens": {huge}, "completion_tokens": {huge}}}}}'
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with serving(server):
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        argv = ["run", "--provider", "openai", "--base-url", url, "--model", "m", "--no-api-key"]
        code, out, err = in_process([*argv, "--workspace", str(workspace), "Go"])
    assert code == EXIT_REJECTED, err
    assert "stopped: provider error" in out and "usage.prompt_tokens: fails the check less_than_equal" in out


# --------------------------------------------------------------------------- the classes, as properties


def assert_clean_in_process(code: int, out: str, err: str) -> None:
    assert code in EXIT_CODES
    assert printable(out) == out and printable(err) == err


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=300) | st.text(max_size=200).map(lambda text: text.encode("utf-8", "surrogatepass")))
def test_any_bytes_on_standard_input(data: bytes) -> None:
    code, out, err = in_process(["check"], stdin=data)
    assert_clean_in_process(code, out, err)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        assert code == EXIT_USAGE and "not valid UTF-8" in err


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_as_an_argument(text: str) -> None:
    code, out, err = in_process(["check", "--", text] if text.startswith("-") else ["check", text])
    assert_clean_in_process(code, out, err)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_any_bytes_in_a_file_match_standard_input(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "reply.bin"
    path.write_bytes(data)
    from_file = in_process(["check", "--file", str(path)])
    assert_clean_in_process(*from_file)
    from_stdin = in_process(["check"], stdin=data)
    assert from_file[0] == from_stdin[0] and from_file[1] == from_stdin[1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    replies=st.lists(
        st.text(max_size=80) | st.binary(max_size=40).map(lambda raw: raw.decode("latin-1")), min_size=1, max_size=5
    )
)
def test_any_script_runs_to_a_documented_end(tmp_path: Path, replies: list[str]) -> None:
    (tmp_path / "ws").mkdir(exist_ok=True)
    path = tmp_path / "script.txt"
    path.write_bytes("\n".join(replies).encode("utf-8", "surrogatepass"))
    code, out, err = in_process(
        [
            "run",
            "--provider",
            "scripted",
            "--script",
            str(path),
            "--workspace",
            str(tmp_path / "ws"),
            "--max-steps",
            "3",
            "Go",
        ]
    )
    assert_clean_in_process(code, out, err)
