"""What a report says about where it came from: the harness's version and source hash, the IUT's certificate.

D-RPT-1: the source hash is SHA-256 over the package's own files (every
``*.py``, ``*.cddl``, ``*.json``, ``*.md``, ``*.txt`` and ``*.j2`` under
``sdcp_conformance/``, sorted by relative path, each contributing
``path NUL length NUL bytes``). Two runs with the same hash ran the same
harness, cases and judge, whatever the version string says; bytecode and
caches are left out so the hash does not depend on who imported what.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from sdcp_conformance import __version__
from sdcp_conformance.transport.certificates import fingerprint_der, fingerprint_pem

PACKAGE = Path(__file__).resolve().parents[1]
HASHED_SUFFIXES = frozenset({".py", ".cddl", ".json", ".md", ".txt", ".j2"})


@cache
def source_hash(root: Path = PACKAGE) -> str:
    """SHA-256 (hex) of the harness's source files (D-RPT-1)."""
    digest = hashlib.sha256()
    files = sorted(path for path in root.rglob("*")
                   if path.is_file() and path.suffix in HASHED_SUFFIXES and "__pycache__" not in path.parts)
    for path in files:
        data = path.read_bytes()
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
    return digest.hexdigest()


def harness_info() -> dict[str, Any]:
    return {"name": "sdcp-conformance", "version": __version__, "source_sha256": source_hash()}


def embedded_iut_fingerprint(workdir: Path, iut_uri: str) -> str | None:
    """The embedded IUT's certificate: the party of a PKI under ``workdir`` whose base URI is the IUT's."""
    from sdcp_conformance.errors import InvalidArgument
    from sdcp_conformance.transport.pki import load_pki

    for manifest in sorted(workdir.rglob("pki.json")):
        try:
            pki = load_pki(manifest.parent)
        except (InvalidArgument, OSError, ValueError, KeyError):
            continue
        for name, uri in pki.base_uris.items():
            if uri == iut_uri and name in pki.parties:
                return fingerprint_pem(pki.cert(name))
    return None


__all__ = ["HASHED_SUFFIXES", "embedded_iut_fingerprint", "fingerprint_der", "fingerprint_pem", "harness_info",
           "source_hash"]
