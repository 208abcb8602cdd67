"""The wheel is the product: it carries the mock models, checked against their manifest, and none of the project's
own test instruments (the Node.js stand-ins, the planted bugs of ``tests/standins/``).

The wheel is built from a copy of the checkout's sources with the installed setuptools (no build isolation, no
network); ``.ci/run`` builds the sdist and wheel with ``python -m build`` and runs the wheel outside the checkout.
"""

from __future__ import annotations

import email
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sdcp_conformance.models.registry import manifest_problems

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("sdcp_conformance", "mock_models", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md",
           "constraints.txt")
"""What a build reads (the sdist's contents)."""
BUILD_TIMEOUT_S = 300
PACKAGED = "sdcp_conformance/mock_models/"
REFERENCE_ONLY = {"torch", "safetensors", "tokenizers"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    source = folder / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(ROOT / name, source / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                           "--wheel-dir", str(folder / "dist"), str(source)],
                          capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (built,) = (folder / "dist").glob("sdcp_conformance-*.whl")
    return built


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_carries_every_file_the_mock_model_manifest_lists(wheel: Path, tmp_path: Path) -> None:
    manifest = json.loads((ROOT / "mock_models" / "manifest.json").read_text(encoding="utf-8"))
    expected = {"manifest.json", manifest["greedy_prompts"], "README.md"}
    expected |= {f"{model['path']}/{name}" for model in manifest["models"] for name in model["bytes"]}
    packaged = {name[len(PACKAGED):] for name in _names(wheel) if name.startswith(PACKAGED)}
    assert packaged == expected
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path, [name for name in archive.namelist() if name.startswith(PACKAGED)])
    copy = tmp_path / PACKAGED
    assert manifest_problems(copy) == []  # sizes and the P1-HASH-1 digests of every model, as the manifest says
    assert (copy / "bigram" / "model.safetensors").read_bytes() == \
        (ROOT / "mock_models" / "bigram" / "model.safetensors").read_bytes()


def test_the_wheel_holds_no_stand_in_and_no_planted_bug(wheel: Path) -> None:
    names = _names(wheel)
    assert {name.split("/", 1)[0] for name in names} == {"sdcp_conformance", "sdcp_conformance-0.1.0.dist-info"}
    assert [name for name in names if name.endswith((".js", "package.json", "package-lock.json"))] == []
    assert [name for name in names if re.search(r"(^|/)(standin|planted|node_packages)", name)] == []
    # what users run still travels: the spec copies, the report template, the suites' recorded durations
    assert {"sdcp_conformance/spec/draft-sdcp.txt", "sdcp_conformance/report/templates/report.html.j2",
            "sdcp_conformance/suites/verifier/durations.json", "sdcp_conformance/testing/misbehaving.py"} <= set(names)


def test_the_base_requirements_hold_no_torch_and_each_extra_its_own(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        metadata_name = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(archive.read(metadata_name))
    requirements = metadata.get_all("Requires-Dist") or []
    base = {_name(line) for line in requirements if "extra ==" not in line}
    by_extra: dict[str, set[str]] = {}
    for line in requirements:
        if "extra ==" in line:
            extra = line.split("extra ==", 1)[1].strip().strip("'\"")
            by_extra.setdefault(extra, set()).add(_name(line))
    assert set(metadata.get_all("Provides-Extra") or []) == {"reference", "fuzz-api", "redis", "test"}
    assert not base & (REFERENCE_ONLY | {"schemathesis", "redis", "in-toto", "pytest"})
    assert {"hpack", "hyperframe", "protobuf", "in-toto-attestation"} <= base
    assert by_extra["reference"] == REFERENCE_ONLY
    assert by_extra["fuzz-api"] == {"schemathesis"}
    assert by_extra["redis"] == {"redis"}
    assert "sdcp-conformance" in by_extra["test"]  # the tests pull in every extra: [reference,fuzz-api,redis]


def _name(requirement: str) -> str:
    return requirement.split(";", 1)[0].split("[", 1)[0].split("<", 1)[0].split(">", 1)[0].split("=", 1)[0] \
        .split("!", 1)[0].split("~", 1)[0].strip().lower()
