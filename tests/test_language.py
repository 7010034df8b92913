"""The edition's language is read from where the notebook runs (or the locale), and every check speaks both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codeagent_lite.workbook.contract import CHECKS, SAMPLES, Check, Sample
from codeagent_lite.workbook.language import edition_language

CHECKS_BY_ID = {check.id: check for check in CHECKS}


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


@pytest.mark.parametrize(
    ("environ", "language"),
    [
        ({"LANG": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({}, "en"),
        ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LC_ALL": "C", "LC_MESSAGES": "zh_CN.UTF-8"}, "en"),  # LC_ALL wins, as in every POSIX program
        ({"LC_ALL": "zh_CN.UTF-8", "LANG": "C"}, "zh"),
        ({"LC_ALL": "", "LANG": "zh_CN.UTF-8"}, "zh"),  # set but empty counts as unset
    ],
)
def test_without_an_edition_folder_the_locale_chooses(environ: dict[str, str], language: str) -> None:
    assert edition_language(Path("/home/li_lei/course"), environ) == language


def test_the_edition_folder_and_cal_lang_come_before_the_locale() -> None:
    assert edition_language(Path("/course/notebooks/en"), {"LANG": "zh_CN.UTF-8"}) == "en"
    assert edition_language(Path("/course/exercises_en"), {"LC_ALL": "zh_CN.UTF-8"}) == "en"
    assert edition_language(Path("/x"), {"LANG": "zh_CN.UTF-8", "CAL_LANG": "en"}) == "en"


def test_an_explicit_request_comes_first_and_an_unknown_one_is_ignored() -> None:
    zh_everywhere = {"CAL_LANG": "zh", "LANG": "zh_CN.UTF-8"}
    assert edition_language(Path("/course/notebooks/zh"), zh_everywhere, requested="en") == "en"
    assert edition_language(Path("/course/notebooks/en"), {}, requested="zh_CN") == "zh"
    assert edition_language(Path("/course/notebooks/zh"), {}, requested="fr") == "zh"


# --------------------------------------------------------------------------- verify's checks, in both languages

CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("check", CHECKS, ids=[check.id for check in CHECKS])
def test_every_check_has_its_texts_in_both_languages(check: Check) -> None:
    english, chinese = check.words("en"), check.words("zh")
    assert (english.name, english.ours) == (check.name, check.ours), "the English edition prints the contract's ids"
    for part, fields in (("given", check.given_fields), ("expected", check.expected_fields)):
        # A template is filled in (no "{name}" left); a text without fields is the contract's own.
        shown = getattr(english, part)
        assert shown == getattr(check, part) if not fields else "{" + fields[0][0] + "}" not in shown, (part, shown)
    assert CHINESE.search(chinese.name), f"{check.id}: the name {chinese.name!r} is not Chinese"
    assert (chinese.ours is None) == (english.ours is None)
    if chinese.ours is not None:
        assert CHINESE.search(chinese.ours), f"{check.id}: ours {chinese.ours!r} is not Chinese"
    for part in ("given", "expected"):
        said = getattr(chinese, part)
        # A part that is a Python value (a repr) is shown as it is in both editions; prose is translated.
        assert said == getattr(english, part) or CHINESE.search(said), f"{check.id}: {part} {said!r}"


def test_a_part_shown_the_same_in_both_languages_is_a_python_value_not_prose() -> None:
    """``given``/``expected`` may stay untranslated only when they are code: a repr or a call."""
    looks_like_code = re.compile(r"""^(['"[{]|\w+\(|\w+=)""")
    untranslated = [
        (check.id, part, text)
        for check in CHECKS
        for part in ("given", "expected")
        if getattr(check.words("zh"), part) == (text := getattr(check, part)) and not looks_like_code.match(text)
    ]
    assert untranslated == [], f"English prose shown untranslated in the Chinese edition: {untranslated}"


@pytest.mark.parametrize("sample", SAMPLES, ids=[sample.id for sample in SAMPLES])
def test_every_sample_has_its_label_and_cost_in_both_languages(sample: Sample) -> None:
    assert sample.words("en") == (sample.label, sample.cost) or sample.label_fields
    label, cost = sample.words("zh")
    assert CHINESE.search(label), f"{sample.id}: {label!r}"
    assert bool(cost) == bool(sample.cost) and (not cost or CHINESE.search(cost))
