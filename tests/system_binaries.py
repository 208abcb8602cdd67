"""The system programs some tests drive for real (Debian packages; ``.ci/run`` installs whichever is missing).

A missing one fails only the tests that need it, each with the one line that installs it: never a skip, and
never an error at import that would stop the collection of the whole suite.
"""

from __future__ import annotations

import shutil

import pytest

PROGRAMS: dict[str, tuple[tuple[str, ...], str]] = {
    "chromium": (("chromium", "chromium-browser"), "chromium"),
    "redis-server": (("redis-server",), "redis-server"),
    "node": (("node",), "nodejs"),
    "npm": (("npm",), "npm"),
}
"""Program → (the names it may have on PATH, the Debian package that installs it)."""


def install_hint(program: str) -> str:
    package = PROGRAMS[program][1]
    return (f"{program} is not installed: install the Debian package {package} "
            f"(apt-get install -y {package}; .ci/run installs it)")


def require_program(program: str) -> str:
    """The program's path on PATH; fails the calling test with :func:`install_hint` when there is none."""
    names, _ = PROGRAMS[program]
    found = next((path for path in map(shutil.which, names) if path is not None), None)
    if found is None:
        pytest.fail(install_hint(program), pytrace=False)
    return found


__all__ = ["PROGRAMS", "install_hint", "require_program"]
