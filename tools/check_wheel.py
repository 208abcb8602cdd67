"""The built wheel, installed as a vendor installs it, outside the checkout (``.ci/run`` runs this on every CI run).

    python tools/check_wheel.py           # from a venv with the [test] extra (it serves the reference verifier)
    python tools/check_wheel.py --keep    # keep the temporary folder (the venv, the reports) and say where

1. ``python -m build``: the sdist, then the wheel built from it; the wheel must carry the mock models (every
   file the manifest lists, with the manifest's sizes and digests) and no test instrument (no ``.js`` file, no
   stand-in, no planted-bug table).
2. A fresh venv outside the checkout gets the wheel without extras (``pip install -c constraints.txt``): no
   torch. From a temporary folder: ``certify`` (the embedded reference) says in one line that it needs
   ``[reference]`` and exits 2; ``pki init --iut verifier``; the reference verifier is started from the venv
   running this script (which has ``[reference]``) with the command ``pki init`` printed; ``check --target`` and
   a short ``certify --target`` (sanity, transport and the ctx session case) exit 0.
3. The same venv then gets ``[reference]``, and ``sdcp-conformance certify`` (the embedded reference, every case)
   passes from another temporary folder.

Prints the size of the venv's site-packages after each install. Exits 1, saying which step failed, otherwise 0.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
BUILD_TIMEOUT_S = 600
INSTALL_TIMEOUT_S = 1200
STEP_TIMEOUT_S = 120
CERTIFY_TIMEOUT_S = 900
READY_TIMEOUT_S = 180
