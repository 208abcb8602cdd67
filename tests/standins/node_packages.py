"""What the Node.js stand-ins (verifier, router, drafter) share: finding ``node`` and installing their sources.

Each stand-in is a folder of ECMAScript modules with a ``package.json`` and a ``package-lock.json`` pinning its
npm packages. It is never run from the package folder (which may be read-only, and must stay free of
``node_modules``): :func:`install` copies it into a cache folder keyed by the sources' hash and installs the
pinned packages there once, under a file lock (parallel test workers install once).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from sdcp_conformance.errors import SdcpConformanceError

CACHE_ENV = "XDG_CACHE_HOME"
NPM_TIMEOUT_S = 300.0


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
    """A folder ``prefix-<hash>`` in the cache with ``names`` copied from ``source`` and the pinned npm packages
    installed; an edit of a module or of the lockfile gets a fresh folder."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + (source / name).read_bytes())
    folder = cache_root() / f"{prefix}-{digest.hexdigest()[:16]}"
    done = folder / ".installed"
    if done.is_file():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if done.is_file():
            return folder
        for name in names:
            shutil.copyfile(source / name, folder / name)
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


__all__ = ["CACHE_ENV", "NPM_TIMEOUT_S", "StandinUnavailable", "cache_root", "install", "node_binary"]
