"""A provider's failure reaches the learner in the learner's language, worded from its code, never as English.

Each failure is data (``providers.failure``: a code and its parameters); the workbook words it through the
catalog (``workbook.provider_words``). These tests hold every code to a Chinese sentence, and follow one
failure through the agent's transcript and one through the command line, as a Chinese learner meets them.
"""

from __future__ import annotations

import re
import string

import pytest

from codeagent_lite import JsonTextModelAdapter, ModelProviderError, ProviderError
from codeagent_lite.agent.loop import ProviderErrorStep, StopReason, run_agent
from codeagent_lite.cli import main
from codeagent_lite.providers.failure import FAILURE_WORDS, FailureCode, ProviderFailure, engine_end
from codeagent_lite.scripted_provider import ScriptedProvider
from codeagent_lite.workbook.provider_words import failure_text, provider_error_text, stored_failure_text
from codeagent_lite.workbook.transcript_view import render_transcript

CHINESE = re.compile(r"[\u4e00-\u9fff]")
# Three English words in a row, once code spans, names and the blog's English terms are taken out.
ENGLISH_SENTENCE = re.compile(r"[A-Za-z]+[ ,;:]+[a-z]+[ ,;:]+[a-z]+")
KEPT_IN_ENGLISH = re.compile(r"`[^`]*`|pip install '[^']*'|GET /models|api_key_env=None|Provider|Token|\{[a-z_]+\}")


def english_left(text: str) -> list[str]:
    return ENGLISH_SENTENCE.findall(KEPT_IN_ENGLISH.sub(" ", text))


def example(code: FailureCode) -> ProviderFailure:
    """``code`` with a plain value for every parameter its words name."""
    names = {name for _, name, _, _ in string.Formatter().parse(FAILURE_WORDS[code]) if name}
    return ProviderFailure(code, **dict.fromkeys(names, "7"))


@pytest.mark.parametrize("code", list(FailureCode))
def test_every_failure_has_chinese_words_made_from_its_code(code: FailureCode) -> None:
    failure = example(code)
    chinese = failure_text(failure, "zh")
    assert CHINESE.search(chinese), f"{code}: {chinese!r} is not Chinese"
    assert english_left(chinese) == [], f"{code}: English left in {chinese!r}"
    assert failure_text(failure, "en") == str(failure)  # the English is the message the failure carries


def test_a_nested_failure_is_worded_in_the_same_language() -> None:
    failure = ProviderFailure(FailureCode.ENGINE_GONE, ended=engine_end(-9))
    assert failure_text(failure, "zh").startswith("本地引擎因信号 SIGKILL 终止：最常见的原因是系统内存不够")
    assert str(failure).startswith("the local engine died with SIGKILL: most often the system ran out of memory")


def test_a_failure_kept_in_a_file_is_worded_from_its_code_and_an_unknown_one_shown_as_it_is() -> None:
    assert stored_failure_text("engine-exited", {"returncode": "3"}, "zh") == "本地引擎退出了，退出码 3"
    assert stored_failure_text("the engine died (an older file's sentence)", {}, "zh") == (
        "the engine died (an older file's sentence)"
    )
    assert stored_failure_text("engine-exited", {}, "zh") == "engine-exited"  # a parameter is missing


def test_a_provider_failure_reaches_a_chinese_learner_in_the_transcript_with_no_english_sentence() -> None:
    timed_out = ProviderFailure(FailureCode.TIMED_OUT, url="http://127.0.0.1:9/v1", seconds="30")
    transcript = run_agent(JsonTextModelAdapter(ScriptedProvider([timed_out])), [], "Read notes.txt.")
    assert transcript.stop_reason is StopReason.PROVIDER_ERROR
    step = transcript.steps[-1]
    assert isinstance(step, ProviderErrorStep) and isinstance(step.error, ModelProviderError)
    chinese = render_transcript(transcript, language="zh")
    said = "Provider 请求失败：请求 http://127.0.0.1:9/v1 超时：30 秒内没有应答"
    assert f"✘ {said}" in chinese and f"（{said}）" in chinese  # the step and the stop line
    for line in chinese.splitlines()[1:]:  # the task is the learner's own text
        assert english_left(line.replace("http://127.0.0.1:9/v1", "")) == [], line
    english = render_transcript(transcript, language="en")
    assert f"✘ {step.message}" in english
    assert step.message == "provider request failed: request to http://127.0.0.1:9/v1 timed out: no answer within 30 s"


def test_a_learners_own_provider_error_is_shown_as_its_sentence() -> None:
    theirs = ProviderError("HTTP 503 from my server")
    assert provider_error_text(theirs, "zh") == "HTTP 503 from my server"

    class Unprintable(ProviderError):
        def __str__(self) -> str:
            raise RuntimeError("no words")

    assert provider_error_text(Unprintable()) == "(the error's message cannot be shown)"
    transcript = run_agent(JsonTextModelAdapter(ScriptedProvider([theirs])), [], "Go.")
    assert "✘ provider request failed: HTTP 503 from my server" in render_transcript(transcript, language="zh")


def test_the_command_line_says_why_the_provider_cannot_be_set_up_in_chinese(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    monkeypatch.setenv("CAL_LANG", "zh")
    monkeypatch.delenv("CAL_NO_SUCH_KEY", raising=False)
    argv = ["run", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    status = main([*argv, "--api-key-env", "CAL_NO_SUCH_KEY", "--workspace", str(tmp_path), "Go."])
    said = capsys.readouterr().err
    assert status != 0
    assert "环境变量 CAL_NO_SUCH_KEY 没有设置；请把 API 密钥放进这个变量" in said
    assert "is not set" not in said


def test_the_scripted_provider_running_out_is_worded_from_its_count() -> None:
    transcript = run_agent(JsonTextModelAdapter(ScriptedProvider([])), [], "Go.")
    assert "✘ Provider 请求失败：脚本化 Provider 调用了 0 次之后就没有回复可用了" in render_transcript(
        transcript, language="zh"
    )
    assert "✘ provider request failed: scripted provider has no reply left after 0 calls" in render_transcript(
        transcript, language="en"
    )


@pytest.mark.parametrize(
    ("base_url", "model", "expected"),
    [
        ("localhost:8080", "m", "base_url 必须是带主机名的 http:// 或 https:// 地址，实际是 'localhost:8080'"),
        ("http://127.0.0.1:9/v1", " ", "模型名不能为空，实际是 ' '"),
    ],
)
def test_a_setup_mistake_is_worded_in_chinese(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: object,
    base_url: str,
    model: str,
    expected: str,
) -> None:
    monkeypatch.setenv("CAL_LANG", "zh")
    argv = ["run", "--provider", "openai", "--base-url", base_url, "--model", model, "--no-api-key"]
    status = main([*argv, "--workspace", str(tmp_path), "Go."])
    said = capsys.readouterr().err
    assert status != 0
    assert expected in said
    assert english_left(said) == [], said


def test_a_setup_mistake_is_a_value_error_with_english_words_for_a_program() -> None:
    from codeagent_lite.providers import OpenAICompatibleProvider

    with pytest.raises(ValueError, match="base_url must be an http"):
        OpenAICompatibleProvider("localhost:8080", "m", api_key_env=None)
    with pytest.raises(ValueError, match="must not be blank"):
        OpenAICompatibleProvider("http://127.0.0.1:9/v1", " ", api_key_env=None)


def test_a_copied_or_pickled_failure_stays_the_same_kind_with_the_same_data() -> None:
    import copy
    import pickle

    from codeagent_lite.providers.failure import SetupFailure
    from codeagent_lite.providers.local_server import EngineStartError
    from codeagent_lite.scripted_provider import ScriptExhaustedError

    setup = SetupFailure(FailureCode.BLANK_MODEL, found="' '")
    started = EngineStartError(engine_end(-9), "the log's last line")
    exhausted = ScriptExhaustedError(3)
    for error in (setup, started, exhausted):
        for copied in (copy.deepcopy(error), pickle.loads(pickle.dumps(error))):
            assert type(copied) is type(error)
            assert str(copied) == str(error)
    assert isinstance(copy.deepcopy(setup), ValueError)
    copied_start = copy.deepcopy(started)
    assert copied_start.cause.code == started.cause.code
    assert copied_start.params["log_tail"] == "the log's last line"
    assert copy.deepcopy(exhausted).calls == 3
