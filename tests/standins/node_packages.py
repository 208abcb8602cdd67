"""What the Node.js stand-ins (verifier, router, drafter) share: finding ``node``, installing their sources, and
their launchers' last steps.

Each stand-in is a folder of ECMAScript modules with a ``package.json`` and a ``package-lock.json`` pinning its
npm packages; the modules all three import (``node_common/``: CBOR, problem types, member checks, digests, the
outgoing connections and the server's TLS) are installed into each one's folder as ``node_common/``. It is never
run from the package folder (which may be read-only, and must stay free of ``node_modules``): :func:`install`
copies it into a cache folder keyed by the sources' hash and installs the pinned packages there once, under a
file lock (parallel test workers install once).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from sdcp_conformance.errors import SdcpConformanceError

CACHE_ENV = "XDG_CACHE_HOME"
NPM_TIMEOUT_S = 300.0
COMMON = Path(__file__).resolve().parent / "node_common"
COMMON_SOURCES = ("protocol.js", "links.js", "server.js")
"""The shared modules, each stand-in's ``./node_common/…`` once installed."""


class StandinUnavailable(SdcpConformanceError):
    """Node.js or npm is missing, or the npm package could not be installed."""


def cache_root() -> Path:
    base = os.environ.get(CACHE_ENV) or str(Path.home() / ".cache")
    return Path(base) / "sdcp-conformance"


def node_binary() -> str:
    found = shutil.which("node")
    if found is None:
        raise StandinUnavailable("Node.js is not installed (Debian: apt-get install -y nodejs npm)")
    return found


def install(source: Path, names: Sequence[str], prefix: str) -> Path:
    """A folder ``prefix-<hash>`` in the cache with ``names`` copied from ``source``, the shared modules in its
    ``node_common/``, and the pinned npm packages installed; an edit of a module or of the lockfile gets a fresh
    folder."""
    files = {name: source / name for name in names}
    files |= {f"{COMMON.name}/{name}": COMMON / name for name in COMMON_SOURCES}
    digest = hashlib.sha256()
    for name, path in files.items():
        digest.update(name.encode() + b"\0" + path.read_bytes())
    folder = cache_root() / f"{prefix}-{digest.hexdigest()[:16]}"
    done = folder / ".installed"
    if done.is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if done.is_file():
            return folder
        (folder / COMMON.name).mkdir(exist_ok=True)
        for name, path in files.items():
            shutil.copyfile(path, folder / name)
        npm = shutil.which("npm")
        if npm is None:
            raise StandinUnavailable("npm is not installed (Debian: apt-get install -y npm)")
        # `npm install` with the lockfile, not `npm ci`: the lock pins every package and its integrity;
        # `npm ci` refuses a lock without cbor-x's optional native decoder's platform packages, which some npm
        # releases do not record (the decoder is left out: cbor-x falls back to JavaScript).
        command = [npm, "install", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund", "--no-save"]
        try:
            subprocess.run(command, cwd=folder, check=True, timeout=NPM_TIMEOUT_S, capture_output=True, text=True)
        except subprocess.CalledProcessError as error:
            raise StandinUnavailable(f"`npm install` in {folder} failed:\n{error.stderr}") from error
        except subprocess.TimeoutExpired as error:
            raise StandinUnavailable(f"`npm install` in {folder} took over {NPM_TIMEOUT_S:g} s") from error
        done.write_text("")
    return folder


def write_once(path: Path, content: Callable[[], bytes]) -> Path:
    """``path``, written with ``content()`` unless it is there already: whole (another process may read it
    meanwhile), through a partial file of this process's."""
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_bytes(content())
        partial.replace(path)
    return path


@contextmanager
def failing_as(launcher: str) -> Iterator[None]:
    """A launcher's preparation: what is missing (Node.js, npm, a PKI file, a model) ends it, said in one line."""
    try:
        yield
    except SdcpConformanceError as error:  # StandinUnavailable too
        sys.exit(f"{launcher}: {error}")


def installed_or_said(installed: Callable[[], Path], install_only: bool) -> tuple[str, Path] | None:
    """``node`` and the stand-in's installed folder; None for ``--install``, having said where it is installed."""
    node, folder = node_binary(), installed()
    if install_only:
        print(f"installed in {folder}")
        return None
    return node, folder


def become_node(node: str, arguments: Sequence[str], environment: Mapping[str, str] | None = None) -> NoReturn:
    """Replace this process by ``node arguments…`` (its PID and CPU time are the stand-in's)."""
    sys.stdout.flush()
    if environment is None:
        os.execv(node, [node, *arguments])
    os.execve(node, [node, *arguments], environment)


__all__ = ["CACHE_ENV", "COMMON", "COMMON_SOURCES", "NPM_TIMEOUT_S", "StandinUnavailable", "become_node",
           "cache_root", "failing_as", "install", "installed_or_said", "node_binary", "write_once"]
