"""``python -m codeagent_lite run``: offline through a script file, with the documented exit codes."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from loopback_server import Answer, Server, chat_completion

from codeagent_lite.cli import EXIT_REJECTED, EXIT_USAGE, EXIT_VALID, UsageError, main, parse_script

REPO = Path(__file__).resolve().parents[1]

CALL = {"type": "tool_call", "call_id": "call_1", "tool_name": "read_file", "arguments": {"path": "notes.txt"}}
ANSWER = {"type": "final_answer", "content": "notes.txt has 2 lines."}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("buy milk\nfix bug\n", encoding="utf-8")
    return root


def write_script(tmp_path: Path, content: str) -> str:
    path = tmp_path / "script.txt"
    path.write_text(content, encoding="utf-8")
    return str(path)


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(["run", *argv], stdout=out)
    return status, out.getvalue()


# --------------------------------------------------------------------------- whole runs


def test_run_reaching_a_final_answer_exits_0(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path, json.dumps([CALL, ANSWER]))
    status, output = run_cli(
        "--provider", "scripted", "--script", script, "--workspace", str(workspace), "How long is notes.txt?"
    )
    assert status == EXIT_VALID
    lines = output.splitlines()
    assert lines[0] == "provider: scripted (2 replies)"
    assert lines[1] == "task: How long is notes.txt?"
    assert "    => ToolCall(call_id='call_1', tool_name='read_file', arguments={'path': 'notes.txt'})" in lines
    assert "[2] tool result · call_id='call_1' · ok" in lines
    assert "    buy milk" in lines
    assert "stopped: final answer (after 2 model calls)" in lines
    assert "final answer: notes.txt has 2 lines." in lines
    assert lines[-1].startswith("usage: ") and lines[-1].endswith("tokens over 2 model calls (0 rejected)")


def test_rejected_replies_show_the_ladder_and_exit_1(tmp_path: Path, workspace: Path) -> None:
    # Line form: each line is sent exactly as written, broken ones included.
    script = write_script(tmp_path, "Sure! here it is\n\n{'type': 'final_answer'}\n[1, 2]\n")
    status, output = run_cli("--provider", "scripted", "--script", script, "--workspace", str(workspace), "Hi")
    assert status == EXIT_REJECTED
    assert "[1] model call 1 · rejected at layer 1 (JSON syntax)" in output
    layer_1 = "✘ layer 1  JSON syntax       failed: model output must be valid JSON at line 1, column 2: single quotes"
    assert layer_1 in output
    assert "✘ layer 2  top-level object  failed: model output must be an object, found an array" in output
    assert "· layer 3  action type       not reached" in output
    assert "stopped: too many rejected replies in a row" in output
    assert "final answer:" not in output


def test_max_steps_and_max_rejections_are_passed_on(tmp_path: Path, workspace: Path) -> None:
    calls = [{**CALL, "call_id": f"c{n}"} for n in range(5)]
    script = write_script(tmp_path, json.dumps(calls))
    status, output = run_cli(
        "--provider", "scripted", "--script", script, "--workspace", str(workspace), "--max-steps", "2", "Go"
    )
    assert status == EXIT_REJECTED
    assert "stopped: step limit reached (2 model calls without a final answer)" in output

    script = write_script(tmp_path, "bad\nbad\n" + json.dumps(ANSWER))
    status, output = run_cli(
        "--provider", "scripted", "--script", script, "--workspace", str(workspace), "--max-rejections", "1", "Go"
    )
    assert status == EXIT_REJECTED
    assert "stopped: too many rejected replies in a row (2 rejected replies in a row" in output


def test_script_running_out_is_a_provider_error(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path, json.dumps([CALL]))
    status, output = run_cli("--provider", "scripted", "--script", script, "--workspace", str(workspace), "Go")
    assert status == EXIT_REJECTED
    assert "stopped: provider error (provider request failed: scripted provider has no reply left" in output


def test_tools_are_confined_to_the_workspace(tmp_path: Path, workspace: Path) -> None:
    (tmp_path / "secret.txt").write_text("TOP SECRET", encoding="utf-8")
    escape = {**CALL, "arguments": {"path": "../secret.txt"}}
    script = write_script(tmp_path, json.dumps([escape, ANSWER]))
    status, output = run_cli("--provider", "scripted", "--script", script, "--workspace", str(workspace), "Go")
    assert status == EXIT_VALID
    assert "tool result · call_id='call_1' · error" in output
    assert "TOP SECRET" not in output


def test_module_entry_point_runs_offline_without_the_real_providers(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path, json.dumps([ANSWER]))
    code = (
        "import sys, runpy\n"
        "sys.argv = ['codeagent_lite', 'run', '--provider', 'scripted', '--script', sys.argv[1], "
        "'--workspace', sys.argv[2], 'Hello']\n"
        "try:\n"
        "    runpy.run_module('codeagent_lite', run_name='__main__')\n"
        "except SystemExit as exit_:\n"
        "    heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'llama_cpp', 'httpx')"
        " or m.startswith('codeagent_lite.providers'))\n"
        "    print('heavy modules:', heavy)\n"
        "    raise\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, script, str(workspace)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert completed.returncode == EXIT_VALID, completed.stderr
    assert "final answer: notes.txt has 2 lines." in completed.stdout
    assert "heavy modules: []" in completed.stdout


# --------------------------------------------------------------------------- bad usage


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--provider", "scripted", "Go"], "--provider scripted needs --script FILE"),
        (["--provider", "scripted", "--script", "SCRIPT", "--mode", "schema", "Go"], "--mode only applies"),
        (["--provider", "scripted", "--script", "SCRIPT", "--model", "m", "Go"], "--model only applies"),
        (["--provider", "local", "--script", "SCRIPT", "Go"], "--script only applies"),
        (["--provider", "local", "--no-api-key", "Go"], "--no-api-key only applies"),
        (["--provider", "openai", "--model", "m", "Go"], "needs --base-url URL and --model NAME"),
        (["--provider", "scripted", "--script", "missing.txt", "Go"], "cannot read the script"),
        (["--provider", "scripted", "--script", "SCRIPT", "--workspace", "no/such/dir", "Go"], "existing folder"),
        # "" is not the current folder (--workspace "$UNSET"), and a name the system cannot look up is no traceback
        (["--provider", "scripted", "--script", "SCRIPT", "--workspace", "", "Go"], "existing folder: ''"),
        (["--provider", "scripted", "--script", "SCRIPT", "--workspace", "/" + "a" * 300, "Go"], "File name too long"),
        (["--provider", "scripted", "--script", "SCRIPT", "   "], "the task must not be blank"),
    ],
)
def test_bad_usage_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    script = write_script(tmp_path, json.dumps([ANSWER]))
    argv = [script if arg == "SCRIPT" else str(tmp_path / arg) if arg == "missing.txt" else arg for arg in argv]
    status, output = run_cli(*argv)
    assert status == EXIT_USAGE
    assert output == ""
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["Go"],
        ["--provider", "gemini", "Go"],
        ["--provider", "scripted", "--script", "s", "--max-steps", "0", "Go"],
        ["--provider", "scripted", "--script", "s", "--max-steps", "many", "Go"],
        ["--provider", "scripted", "--script", "s", "--max-rejections", "-1", "Go"],
        ["--provider", "local", "--mode", "grammar", "Go"],
        ["--provider", "scripted", "--script", "s"],
    ],
)
def test_argparse_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(*argv)[0] == EXIT_USAGE
    assert "usage:" in capsys.readouterr().err


def test_empty_script_is_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = write_script(tmp_path, "\n  \n")
    assert run_cli("--provider", "scripted", "--script", script, "Go")[0] == EXIT_USAGE
    assert "the script holds no replies" in capsys.readouterr().err


def test_check_still_works_next_to_run() -> None:
    out = io.StringIO()
    assert main(["check", json.dumps(ANSWER)], stdout=out) == EXIT_VALID
    assert main(["check", "[1]"], stdout=io.StringIO()) == EXIT_REJECTED


# --------------------------------------------------------------------------- the script format


def test_parse_script_json_array_of_strings_and_objects() -> None:
    assert parse_script(json.dumps(["not json", {"type": "final_answer", "content": "中文"}])) == (
        "not json",
        '{"type": "final_answer", "content": "中文"}',
    )


def test_parse_script_lines_are_kept_verbatim() -> None:
    assert parse_script('  {"a": 1}  \r\n\nplain words\n') == ('  {"a": 1}  ', "plain words")


def test_parse_script_single_object_is_one_line_reply() -> None:
    # Only a JSON array switches to the list form; one object is just a one-line reply.
    assert parse_script(json.dumps(ANSWER)) == (json.dumps(ANSWER),)


def test_parse_script_refuses_other_items() -> None:
    with pytest.raises(UsageError, match="script item 2 must be a string or an object, found the number 3"):
        parse_script('["ok", 3]')
    with pytest.raises(UsageError, match="no replies"):
        parse_script("[]")


# --------------------------------------------------------------------------- the openai wiring (real sockets, no model)


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_openai_unset_key_variable_is_bad_usage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("codeagent_lite.providers.openai_compatible")
    monkeypatch.delenv("CODEAGENT_TEST_KEY", raising=False)
    status, output = run_cli(
        "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env",
        "CODEAGENT_TEST_KEY", "Go",
    )  # fmt: skip
    assert status == EXIT_USAGE
    assert output == ""
    assert "CODEAGENT_TEST_KEY is not set" in capsys.readouterr().err


def test_openai_server_down_stops_with_a_provider_error_and_never_prints_the_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("codeagent_lite.providers.openai_compatible")
    secret = "sk-test-DO-NOT-PRINT-1234567890"
    monkeypatch.setenv("CODEAGENT_TEST_KEY", secret)
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    status, output = run_cli(
        "--provider", "openai", "--base-url", base_url, "--model", "tiny", "--api-key-env", "CODEAGENT_TEST_KEY",
        "--workspace", str(workspace), "Go",
    )  # fmt: skip
    assert status == EXIT_REJECTED
    assert (
        output.splitlines()[0] == f"provider: openai-compatible (tiny at {base_url}, API key from $CODEAGENT_TEST_KEY)"
    )
    assert "[1] model call 1 · provider error · usage unknown" in output
    assert "stopped: provider error (provider request failed:" in output
    assert secret not in output + capsys.readouterr().err


def test_a_server_that_puts_the_key_into_the_models_reply_never_gets_it_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], workspace: Path
) -> None:
    pytest.importorskip("openai")
    secret = "sk-test-DO-NOT-PRINT-1234567890"
    monkeypatch.setenv("CODEAGENT_TEST_KEY", secret)
    answer = json.dumps({"type": "final_answer", "content": f"your key is {secret} and {secret[3:20]}"})
    with Server(Answer(body=json.dumps(chat_completion(answer)).encode())) as server:
        status, output = run_cli(
            "--provider", "openai", "--base-url", server.base_url, "--model", "tiny", "--api-key-env",
            "CODEAGENT_TEST_KEY", "--workspace", str(workspace), "Go",
        )  # fmt: skip
    assert server.authorizations == [f"Bearer {secret}"]  # the key the server echoes is the one it was sent
    assert status == EXIT_VALID
    assert "your key is" in output
    assert secret not in output and secret[3:20] not in output
    assert secret not in capsys.readouterr().err


def test_no_api_key_and_api_key_env_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    status, _ = run_cli(
        "--provider", "openai", "--base-url", "http://x", "--model", "m", "--no-api-key", "--api-key-env", "K", "Go"
    )
    assert status == EXIT_USAGE
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("separator", ["\u2028", "\x85", "\x0c", "\x1c", "\x0b"])
def test_a_script_line_ends_at_a_newline_only(separator: str) -> None:
    # No line end in a text file (U+2028 is even legal raw in a JSON string): str.splitlines() broke replies there.
    reply = f'{{"type": "final_answer", "content": "one{separator}reply"}}'
    assert parse_script(f"{reply}\r\n{reply}\n") == (reply, reply)
