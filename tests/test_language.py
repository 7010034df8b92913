"""The edition's language is read from where the notebook runs, and every message exists in both languages."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeagent_lite.workbook.language import Messages, edition_language


@pytest.mark.parametrize(
    ("cwd", "language"),
    [
        (Path("/course/notebooks/zh"), "zh"),
        (Path("/course/notebooks/en"), "en"),
        (Path("/home/zh/course/notebooks/en"), "en"),  # the nearest edition folder wins
        (Path("/course/notebooks"), "en"),
        # nbgrader runs a copy in its assignment's folder: release, a student's fetched copy, a submission graded
        (Path("/course/autograded/li_lei/exercises_zh"), "zh"),
        (Path("/home/li_lei/build_it_yourself_zh"), "zh"),
        (Path("/course/notebooks/zh/release/exercises"), "zh"),  # an assignment without a suffix: the folders
        (Path("/course/autograded/bob_zh/exercises"), "en"),  # only the kernel's own folder's suffix counts
        (Path("/course/notebooks/zh/exercises_en"), "en"),
        (Path("/course/_zh"), "en"),
    ],
)
def test_the_edition_folder_chooses_the_language(cwd: Path, language: str) -> None:
    assert edition_language(cwd, environ={}) == language


@pytest.mark.parametrize(("value", "language"), [("zh_CN.UTF-8", "zh"), ("ZH", "zh"), ("en_GB", "en")])
def test_cal_lang_overrides_the_folder(value: str, language: str) -> None:
    assert edition_language(Path("/course/notebooks/en" if language == "zh" else "/x/zh"), {"CAL_LANG": value}) == (
        language
    )


def test_an_unknown_cal_lang_falls_back_to_the_folder() -> None:
    assert edition_language(Path("/course/notebooks/zh"), {"CAL_LANG": "fr"}) == "zh"


def test_messages_speak_the_requested_language() -> None:
    messages = Messages({"hello": {"en": "Hello, {name}", "zh": "你好，{name}"}})
    assert messages.say("hello", language="zh", name="小明") == "你好，小明"
    assert messages.say("hello", language="en", name="Ann") == "Hello, Ann"


def test_a_message_missing_a_language_is_refused() -> None:
    with pytest.raises(ValueError, match="must exist in every language, found none for zh"):
        Messages({"hello": {"en": "Hello"}})  # type: ignore[typeddict-item, dict-item]


def test_a_message_whose_placeholders_differ_is_refused() -> None:
    with pytest.raises(ValueError, match="same placeholders"):
        Messages({"hello": {"en": "Hello, {name}", "zh": "你好"}})
