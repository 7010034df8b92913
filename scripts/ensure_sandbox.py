"""Make sure bubblewrap (and util-linux's setpriv) are there for verify's sandbox.

Usage: python scripts/ensure_sandbox.py      (``make test`` runs it before pytest)

verify and the classroom's grader run learner code in ``codeagent_lite.workbook.sandbox``;
on Linux that is bubblewrap (``bwrap``), and as root ``setpriv`` too (a uid of its own, so
the process limit binds). What it does:
- both found: nothing (says so);
- root on Debian/Ubuntu with apt-get: ``apt-get install -y --no-install-recommends bubblewrap``
  (``apt-get update`` first only when the package is unknown);
- anything else (macOS, Windows, no root): explains what verify falls back to.

It exits 0 even when the install fails: under ``CAL_REQUIRE_SANDBOX=1`` (CI) the tests then
fail loudly (tests/test_sandbox.py), elsewhere verify says which protections apply.
Standard library only, because it runs before anything else is known to work.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def _install() -> bool:
    install = ["apt-get", "install", "-y", "--no-install-recommends", "bubblewrap"]
    done = subprocess.run(install, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, check=False)
        done = subprocess.run(install, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print("!! apt-get could not install bubblewrap:", done.stderr.strip()[-300:], file=sys.stderr)
    return shutil.which("bwrap") is not None


def main() -> int:
    if not sys.platform.startswith("linux"):
        print("sandbox: not Linux; verify runs learner code in a plain subprocess (it says which protections apply)")
        return 0
    missing = [tool for tool in ("bwrap", "setpriv") if shutil.which(tool) is None]
    if not missing:
        print("sandbox: bubblewrap and setpriv found")
        return 0
    if "bwrap" in missing and os.geteuid() == 0 and shutil.which("apt-get"):
        print("sandbox: installing bubblewrap with apt-get ...")
        if _install():
            print("sandbox: bubblewrap installed")
            return 0
    print(
        f"sandbox: {', '.join(missing)} missing; verify falls back to a plain subprocess. "
        "Install it as root: apt-get install -y bubblewrap (setpriv is in util-linux)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
