"""scripts/ensure_browser.py: when it installs chromium, when it only explains, and that it never fails the run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "ensure_browser.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ensure_browser", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ensure_browser"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


ensure_browser = load_script()
Machine = ensure_browser.Machine
Decision = ensure_browser.Decision
DEBIAN = frozenset({"debian"})


def test_present_chromium_is_left_alone_even_where_it_could_be_installed() -> None:
    machine = Machine(chromium_present=True, is_root=True, has_apt_get=True, os_ids=DEBIAN)
    assert ensure_browser.decide(machine)[0] is Decision.PRESENT


@pytest.mark.parametrize("os_ids", [DEBIAN, frozenset({"ubuntu", "debian"})])
def test_missing_chromium_is_installed_by_root_on_debian_and_ubuntu(os_ids: frozenset[str]) -> None:
    machine = Machine(chromium_present=False, is_root=True, has_apt_get=True, os_ids=os_ids)
    assert ensure_browser.decide(machine)[0] is Decision.INSTALL


@pytest.mark.parametrize(
    ("machine", "named_reason"),
    [
        (Machine(chromium_present=False, is_root=False, has_apt_get=True, os_ids=DEBIAN), "not running as root"),
        (Machine(chromium_present=False, is_root=True, has_apt_get=False, os_ids=DEBIAN), "apt-get not found"),
        (
            Machine(chromium_present=False, is_root=True, has_apt_get=True, os_ids=frozenset({"fedora"})),
            "not a Debian or Ubuntu system",
        ),
    ],
)
def test_missing_chromium_is_only_explained_when_it_cannot_be_installed(machine: object, named_reason: str) -> None:
    decision, reason = ensure_browser.decide(machine)
    assert decision is Decision.SKIP
    assert named_reason in reason


def test_os_release_ids_include_id_like(tmp_path: Path) -> None:
    os_release = tmp_path / "os-release"
    os_release.write_text('NAME="Ubuntu"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID="24.04"\n', encoding="utf-8")
    assert ensure_browser.read_os_ids(os_release) == frozenset({"ubuntu", "debian"})
    assert ensure_browser.read_os_ids(tmp_path / "missing") == frozenset()


def test_failed_install_warns_loudly_and_still_exits_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    commands: list[tuple[str, ...]] = []

    def fake_run(command: tuple[str, ...]) -> bool:
        commands.append(command)
        return command[1] == "update"  # the update works, the install fails

    monkeypatch.setattr(
        ensure_browser,
        "inspect_machine",
        lambda: Machine(chromium_present=False, is_root=True, has_apt_get=True, os_ids=DEBIAN),
    )
    monkeypatch.setattr(ensure_browser, "run_quietly", fake_run)
    assert ensure_browser.main() == 0
    assert commands == [
        ("apt-get", "update"),
        ("apt-get", "install", "-y", "--no-install-recommends", "chromium"),
    ]
    output = capsys.readouterr().out
    assert "installing chromium failed" in output
    assert "will be SKIPPED" in output


def test_cannot_install_explains_how_and_exits_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        ensure_browser,
        "inspect_machine",
        lambda: Machine(chromium_present=False, is_root=False, has_apt_get=True, os_ids=DEBIAN),
    )
    monkeypatch.setattr(ensure_browser, "run_quietly", lambda command: pytest.fail(f"must not run {command}"))
    assert ensure_browser.main() == 0
    output = capsys.readouterr().out
    assert "not running as root" in output
    assert "apt-get install -y --no-install-recommends chromium fonts-wqy-microhei" in output


def test_a_missing_cjk_font_is_installed_beside_chromium() -> None:
    """Without a CJK font chromium draws Chinese as empty boxes, so the zh edition's screenshot needs one."""
    both = Machine(chromium_present=False, is_root=True, has_apt_get=True, os_ids=DEBIAN, cjk_font_present=False)
    assert ensure_browser.decide(both)[0] is Decision.INSTALL
    assert ensure_browser.missing_packages(both) == ("chromium", "fonts-wqy-microhei")
    font_only = Machine(chromium_present=True, is_root=True, has_apt_get=True, os_ids=DEBIAN, cjk_font_present=False)
    decision, reason = ensure_browser.decide(font_only)
    assert decision is Decision.INSTALL and "CJK font" in reason and "480 MB" not in reason
    assert ensure_browser.apt_commands(ensure_browser.missing_packages(font_only))[-1] == (
        "apt-get",
        "install",
        "-y",
        "--no-install-recommends",
        "fonts-wqy-microhei",
    )
    user = Machine(chromium_present=True, is_root=False, has_apt_get=True, os_ids=DEBIAN, cjk_font_present=False)
    decision, reason = ensure_browser.decide(user)
    assert decision is Decision.SKIP and "CJK font" in reason


def test_the_font_check_asks_fontconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    answers = {"": False, "WenQuanYi Micro Hei\n": True}
    for output, expected in answers.items():
        monkeypatch.setattr(
            ensure_browser.subprocess,
            "run",
            lambda *args, output=output, **kwargs: subprocess.CompletedProcess(args, 0, stdout=output, stderr=""),
        )
        assert ensure_browser.has_cjk_font() is expected

    def missing(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError("fc-list")

    monkeypatch.setattr(ensure_browser.subprocess, "run", missing)
    assert ensure_browser.has_cjk_font() is False
