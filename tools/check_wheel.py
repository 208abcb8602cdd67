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

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sdcp_conformance.models.registry import manifest_problems
from sdcp_conformance.testing.children import ChildNotReady, running

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
BUILD_TIMEOUT_S = 600
INSTALL_TIMEOUT_S = 1200
STEP_TIMEOUT_S = 120
CERTIFY_TIMEOUT_S = 900
READY_TIMEOUT_S = 180
EXTRA_MODULES = ("torch", "safetensors", "tokenizers", "schemathesis")
TARGET_CASES = ("sanity", "transport", "VER-6.1-SESSION-002")


class CheckFailed(Exception):
    pass


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def run(command: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = STEP_TIMEOUT_S,
        expect: int = 0) -> subprocess.CompletedProcess[str]:
    print("$ " + shlex.join(str(word) for word in command), flush=True)
    try:
        done = subprocess.run(list(command), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as error:
        raise CheckFailed(f"{shlex.join(command)} ran over {timeout} s") from error
    if done.returncode != expect:
        raise CheckFailed(f"{shlex.join(command)} exited {done.returncode}, not {expect}:\n"
                          f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


def site_packages_mb(venv: Path) -> float:
    """``du -sm`` of the venv's site-packages (the figure the README gives), else the files' sizes summed."""
    (folder,) = (venv / "lib").glob("python*/site-packages")
    if shutil.which("du"):
        return float(subprocess.run(["du", "-sm", str(folder)], capture_output=True, text=True, check=True,
                                    timeout=STEP_TIMEOUT_S).stdout.split()[0])
    total = sum(path.lstat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())
    return total / 2**20


def check_wheel_contents(wheel: Path) -> None:
    manifest = json.loads((ROOT / "mock_models" / "manifest.json").read_text(encoding="utf-8"))
    expected = {"manifest.json", manifest["greedy_prompts"], "README.md"}
    expected |= {f"{model['path']}/{name}" for model in manifest["models"] for name in model["bytes"]}
    prefix = "sdcp_conformance/mock_models/"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        packaged = {name[len(prefix):] for name in names if name.startswith(prefix)}
        if packaged != expected:
            raise CheckFailed(f"the wheel's mock models differ from the manifest: missing {sorted(expected - packaged)}"
                              f", extra {sorted(packaged - expected)}")
        with tempfile.TemporaryDirectory() as folder:
            archive.extractall(folder, [name for name in names if name.startswith(prefix)])
            problems = manifest_problems(Path(folder) / prefix)
    if problems:
        raise CheckFailed(f"the wheel's mock models do not match their manifest: {problems}")
    instruments = [name for name in names if name.endswith((".js", "package.json", "package-lock.json"))
                   or re.search(r"(^|/)(standin|planted|node_packages)", name)]
    if instruments:
        raise CheckFailed(f"the wheel ships test instruments: {instruments}")
    print(f"{wheel.name}: {len(names)} files, {wheel.stat().st_size / 2**20:.1f} MB; the {len(expected)} mock model "
          "files match the manifest; no .js file, stand-in or planted-bug table")


@contextmanager
def reference_verifier(printed: str, cwd: Path, log: Path) -> Iterator[str]:
    """The ``serve verifier`` command ``pki init`` printed, run by this interpreter (which has [reference])."""
    words = shlex.split(printed)
    command = [sys.executable, "-m", "sdcp_conformance.cli", *words[1:]]
    print("$ " + shlex.join(command) + " &", flush=True)
    try:
        with running(command, log, timeout_s=READY_TIMEOUT_S, cwd=cwd) as base_uri:
            yield base_uri
    except ChildNotReady as error:
        raise CheckFailed(f"the reference verifier did not start: {error}:\n"
                          f"{log.read_text(errors='replace')[-4000:]}") from None


def check(folder: Path) -> None:
    step("build the sdist and the wheel (python -m build)")
    dist = folder / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], cwd=folder, timeout=BUILD_TIMEOUT_S)
    (wheel,) = dist.glob("sdcp_conformance-*.whl")
    (sdist,) = dist.glob("sdcp_conformance-*.tar.gz")
    print(f"{sdist.name}: {sdist.stat().st_size / 2**20:.1f} MB")
    check_wheel_contents(wheel)

    step("install the wheel without extras into a fresh venv outside the checkout")
    venv = folder / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=folder)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-c", str(CONSTRAINTS)]
    run([*pip, str(wheel)], cwd=folder, timeout=INSTALL_TIMEOUT_S)
    base_mb = site_packages_mb(venv)
    probe = f"import importlib.util as u; print([m for m in {EXTRA_MODULES!r} if u.find_spec(m)])"
    found = run([str(venv / "bin" / "python"), "-c", probe], cwd=folder).stdout.strip()
    if found != "[]":
        raise CheckFailed(f"the base install brought {found}")
    print(f"no torch, safetensors, tokenizers or schemathesis; site-packages {base_mb:.0f} MB")

    # The installed command, from a folder outside the checkout, without this checkout on any path.
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "SDCP_MOCK_MODELS")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    tool = str(venv / "bin" / "sdcp-conformance")
    work = folder / "vendor"
    work.mkdir()

    step("without [reference]: the embedded certify names the extra in one line, exit 2")
    done = run([tool, "certify"], cwd=work, env=env, expect=2)
    lines = done.stderr.strip().splitlines()
    if len(lines) != 1 or "[reference]" not in lines[0]:
        raise CheckFailed(f"not one line naming [reference]: {done.stderr!r}")
    print(lines[0])

    step("pki init, a reference verifier served from the test venv, check and certify --target")
    made = run([tool, "pki", "init", "certs", "--iut", "verifier"], cwd=work, env=env)
    printed = next(line.strip() for line in made.stdout.splitlines()
                   if line.strip().startswith("sdcp-conformance serve verifier"))
    only = [word for case in TARGET_CASES for word in ("--only", case)]
    with reference_verifier(printed, work, folder / "verifier.log") as base_uri:
        print(f"the reference verifier serves {base_uri}")
        print(run([tool, "check", "--target", "certs/target.toml"], cwd=work, env=env).stdout.rstrip())
        done = run([tool, "certify", "--target", "certs/target.toml", *only, "--report-dir", "reports-target"],
                   cwd=work, env=env, timeout=CERTIFY_TIMEOUT_S)
        print(done.stdout.strip().splitlines()[-1])

    step("with [reference]: the embedded certify, every case, from another folder")
    run([*pip, f"{wheel}[reference]"], cwd=folder, timeout=INSTALL_TIMEOUT_S)
    reference_mb = site_packages_mb(venv)
    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    done = run([tool, "certify", "--report-dir", "reports"], cwd=elsewhere, env=env, timeout=CERTIFY_TIMEOUT_S)
    print(done.stdout.strip().splitlines()[-1])

    step("install sizes (du -sm of the venv's site-packages, pip and setuptools included)")
    print(f"sdcp-conformance:             {base_mb:.0f} MB")
    print(f"sdcp-conformance[reference]:  {reference_mb:.0f} MB")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="Keep the temporary folder and print where it is.")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="sdcp-wheel-"))
    try:
        check(folder)
    except CheckFailed as error:
        print(f"\nthe installed wheel check failed: {error}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    print("\nthe installed wheel works outside the checkout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
