"""Make sure Debian's chromium and a CJK font are there for the real-browser test of the parser playground.

Usage: python scripts/ensure_browser.py      (``make test`` runs it before pytest)

The browser test drives ``/usr/bin/chromium`` through Playwright. Playwright's own browser
download (``playwright install``) is never used: it fails on this kind of machine, and the
distribution's package is the one the pinned Playwright release is known to work with.
The Chinese edition is tested too, and without a CJK font chromium draws every Chinese character
as an empty box: its screenshot could not show what a Chinese learner sees. Debian's
``fonts-wqy-microhei`` (about 5 MB, the smallest complete one) gives it the glyphs.

What it does:
- chromium already at /usr/bin/chromium and a font for Chinese known to fontconfig: nothing (prints
  chromium's version);
- root on Debian/Ubuntu with apt-get: ``apt-get update`` then
  ``apt-get install -y --no-install-recommends`` whichever of ``chromium`` and ``fonts-wqy-microhei``
  is missing, printing a short summary;
- anything else: explains that the browser test will be skipped and how to install them.

It always exits 0, even when apt-get fails: the rest of the suite should still run, and the
browser test itself then reports a skip with its reason. A failed install prints a loud warning.
Standard library only, because it runs before anything else is known to work.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_PACKAGE = "chromium"
CJK_FONT_PACKAGE = "fonts-wqy-microhei"
OS_RELEASE = Path("/etc/os-release")
MANUAL_HINT = (
    "To run it, install Debian's chromium (so that /usr/bin/chromium exists) and a CJK font, as root:\n"
    f"    apt-get update && apt-get install -y --no-install-recommends {CHROMIUM_PACKAGE} {CJK_FONT_PACKAGE}\n"
    "(never `playwright install`; the test uses the system browser)."
)


def apt_commands(packages: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    return (("apt-get", "update"), ("apt-get", "install", "-y", "--no-install-recommends", *packages))


class Decision(StrEnum):
    PRESENT = "present"
    INSTALL = "install"
    SKIP = "skip"


@dataclass(frozen=True)
class Machine:
    """The facts the decision depends on, gathered separately so the decision can be tested."""

    chromium_present: bool
    is_root: bool
    has_apt_get: bool
    os_ids: frozenset[str]
    cjk_font_present: bool = True


def missing_packages(machine: Machine) -> tuple[str, ...]:
    """The Debian packages the browser test still needs, chromium first."""
    wanted = ((CHROMIUM_PACKAGE, machine.chromium_present), (CJK_FONT_PACKAGE, machine.cjk_font_present))
    return tuple(package for package, present in wanted if not present)


def is_debian_like(os_ids: frozenset[str]) -> bool:
    return bool(os_ids & {"debian", "ubuntu"})


def decide(machine: Machine) -> tuple[Decision, str]:
    """Pick what to do and say why; the reason is printed as is."""
    packages = missing_packages(machine)
    if not packages:
        return Decision.PRESENT, f"chromium found at {CHROMIUM}, and a font for Chinese"
    what = " and ".join("chromium" if package == CHROMIUM_PACKAGE else "a CJK font" for package in packages)
    missing = []
    if not machine.is_root:
        missing.append("not running as root")
    if not machine.has_apt_get:
        missing.append("apt-get not found")
    if not is_debian_like(machine.os_ids):
        missing.append("not a Debian or Ubuntu system")
    if missing:
        return Decision.SKIP, f"{what} missing and cannot be installed automatically ({', '.join(missing)})"
    size = " (~25 s, ~480 MB)" if CHROMIUM_PACKAGE in packages else ""
    return Decision.INSTALL, f"{what} missing; installing {' '.join(packages)} with apt-get{size}"


def read_os_ids(os_release: Path = OS_RELEASE) -> frozenset[str]:
    """ID and ID_LIKE from os-release (e.g. {"ubuntu", "debian"}); empty when unreadable."""
    try:
        text = os_release.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    ids: set[str] = set()
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("ID", "ID_LIKE"):
            ids.update(value.strip().strip("\"'").lower().split())
    return frozenset(ids)


def has_cjk_font() -> bool:
    """Whether fontconfig, where chromium finds its fonts, knows a font that covers Chinese."""
    try:
        result = subprocess.run(
            ["fc-list", ":lang=zh", "family"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0 and bool(result.stdout.strip())


def inspect_machine() -> Machine:
    geteuid = getattr(os, "geteuid", None)
    return Machine(
        chromium_present=CHROMIUM.exists(),
        is_root=geteuid is not None and geteuid() == 0,
        has_apt_get=shutil.which("apt-get") is not None,
        os_ids=read_os_ids(),
        cjk_font_present=has_cjk_font(),
    )


def chromium_version() -> str:
    try:
        result = subprocess.run([str(CHROMIUM), "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        return f"version unknown ({error})"
    # Debian's wrapper script prints a harmless shell warning on stderr; only stdout matters.
    return result.stdout.strip() or f"version unknown (exit {result.returncode})"


def run_quietly(command: tuple[str, ...]) -> bool:
    """Run one apt-get step, print one line about it, and the log's tail only if it failed."""
    environment = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    started = time.monotonic()
    print(f"ensure_browser: running {' '.join(command)}", flush=True)
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    except OSError as error:
        print(f"ensure_browser: could not run {command[0]}: {error}")
        return False
    elapsed = time.monotonic() - started
    if result.returncode == 0:
        print(f"ensure_browser:   done in {elapsed:.0f} s")
        return True
    print(f"ensure_browser:   FAILED with exit code {result.returncode} after {elapsed:.0f} s; last lines:")
    tail = (result.stdout + result.stderr).strip().splitlines()[-12:]
    for line in tail:
        print(f"ensure_browser:   | {line}")
    return False


def install(packages: tuple[str, ...]) -> bool:
    for command in apt_commands(packages):
        if not run_quietly(command):
            return False
    return CHROMIUM.exists() and (CJK_FONT_PACKAGE not in packages or has_cjk_font())


def warn(headline: str) -> None:
    bar = "!" * 78
    print(bar)
    for line in [
        headline,
        "The real-browser test of the parser playground will be SKIPPED.",
        *MANUAL_HINT.splitlines(),
    ]:
        print(f"!! {line}")
    print(bar)


def main() -> int:
    machine = inspect_machine()
    decision, reason = decide(machine)
    if decision is Decision.PRESENT:
        print(f"ensure_browser: {reason} ({chromium_version()})")
    elif decision is Decision.INSTALL:
        print(f"ensure_browser: {reason}")
        packages = missing_packages(machine)
        if install(packages):
            print(f"ensure_browser: installed {' '.join(packages)}; {chromium_version()} at {CHROMIUM}")
        else:
            warn(f"WARNING: installing {' '.join(packages)} failed (see the lines above).")
    else:
        warn(f"{reason}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
