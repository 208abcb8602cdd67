"""Build hook: the wheel carries the mock models.

The checkout's top-level ``mock_models/`` is their one copy in the repository (``mock_models/generate.py`` writes
it). Building the wheel copies what its ``manifest.json`` lists (each model's files, the greedy prompts, the
manifest) and its README into the package as ``sdcp_conformance/mock_models/``, where
:func:`sdcp_conformance.models.registry.mock_models_root` finds them in an installed copy and checks them against
the manifest's sizes and SHA-256 digests. The sdist carries ``mock_models/`` at its top (``MANIFEST.in``), so a
wheel built from it gets the same files. An editable install reads the checkout's folder and copies nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SOURCE = Path(__file__).resolve().parent / "mock_models"
PACKAGED = Path("sdcp_conformance") / "mock_models"


def mock_model_files(source: Path) -> list[str]:
    """What the wheel takes from ``source``: the manifest, the files it lists, the README."""
    manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    names = ["manifest.json", manifest["greedy_prompts"], "README.md"]
    for model in manifest["models"]:
        names += [f"{model['path']}/{name}" for name in sorted(model["bytes"])]
    return names


class BuildPyWithMockModels(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (SOURCE / "manifest.json").is_file():
            raise SystemExit(f"no {SOURCE / 'manifest.json'}: the wheel must carry the mock models")
        for name in mock_model_files(SOURCE):
            target = Path(self.build_lib) / PACKAGED / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(SOURCE / name, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if (SOURCE / "manifest.json").is_file():
            outputs += [str(Path(self.build_lib) / PACKAGED / name) for name in mock_model_files(SOURCE)]
        return outputs


setup(cmdclass={"build_py": BuildPyWithMockModels})
