"""The target description: what is tested and how to reach it (a TOML file, or the embedded default).

```toml
[target]
role = "verifier"
base_uri = "https://127.0.0.1:9443/"
ca = "pki/ca.pem"            # trusts the IUT's server certificate
models = ["bigram", "ctx"]   # mock models the IUT serves (manifest ids); `model = "bigram"` also works
pinned_load = 10             # optional: the IUT was started with its load pinned (§6.5.2 branches)

[harness]                    # identities and listeners the harness uses; `pki init --iut verifier` writes them
pki = "pki"                  # folder of the harness's certificates (parties below)
router = "https://127.0.0.1:9450/router/"
cache = "https://127.0.0.1:9451/cache/"
drafters = ["https://127.0.0.1:9452/drafter-1/", "https://127.0.0.1:9453/drafter-2/"]
```

Relative paths are relative to the TOML file's folder.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument

DEFAULT_MODELS = ("bigram", "ctx")


@dataclass(frozen=True)
class TargetConfig:
    role: str
    base_uri: str
    ca: Path
    models: tuple[str, ...]
    pki: Path
    router: str
    cache: str
    drafters: tuple[str, ...]
    pinned_load: int | None = None
    source: Path | None = None
    """The TOML file this came from; None for the embedded default."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def embedded(self) -> bool:
        return self.source is None


def load_target(path: Path) -> TargetConfig:
    """Read and check a target TOML file; errors name the file and the member."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read the target file: {exc}") from exc
    target, harness = _table(raw, "target", path), _table(raw, "harness", path)
    folder = path.resolve().parent
    role = _text(target, "role", path, "target")
    if role != "verifier":
        raise InvalidArgument(f"{path}: [target] role {role!r} is not supported yet (only 'verifier')")
    models = target.get("models", [target["model"]] if "model" in target else None)
    if not isinstance(models, list) or not models or not all(isinstance(m, str) for m in models):
        raise InvalidArgument(f"{path}: [target] needs `models = [\"bigram\", …]` or `model = \"bigram\"`")
    drafters = harness.get("drafters")
    if not isinstance(drafters, list) or len(drafters) < 2 or not all(isinstance(d, str) for d in drafters):
        raise InvalidArgument(f"{path}: [harness] drafters must list at least two drafter base URIs")
    pinned = target.get("pinned_load")
    if pinned is not None and (not isinstance(pinned, int) or not 0 <= pinned <= 100):
        raise InvalidArgument(f"{path}: [target] pinned_load must be an integer in 0..100")
    return TargetConfig(
        role=role,
        base_uri=_uri(target, "base_uri", path, "target"),
        ca=folder / _text(target, "ca", path, "target"),
        models=tuple(models),
        pki=folder / _text(harness, "pki", path, "harness"),
        router=_uri(harness, "router", path, "harness"),
        cache=_uri(harness, "cache", path, "harness"),
        drafters=tuple(drafters),
        pinned_load=pinned,
        source=path,
    )


def _table(raw: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    table = raw.get(name)
    if not isinstance(table, dict):
        raise InvalidArgument(f"{path}: missing [{name}] table")
    return table


def _text(table: dict[str, Any], key: str, path: Path, where: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"{path}: [{where}] {key} must be a non-empty string")
    return value


def _uri(table: dict[str, Any], key: str, path: Path, where: str) -> str:
    value = _text(table, key, path, where)
    if not value.startswith("https://") or not value.endswith("/"):
        raise InvalidArgument(f"{path}: [{where}] {key} must be an https base URI ending in '/' (P1-ID-1)")
    return value


def render_target(config: TargetConfig, folder: Path) -> str:
    """The TOML text of a target description, paths relative to ``folder``."""
    def rel(path: Path) -> str:
        try:
            return str(path.resolve().relative_to(folder.resolve()))
        except ValueError:
            return str(path)

    drafters = ", ".join(f'"{d}"' for d in config.drafters)
    models = ", ".join(f'"{m}"' for m in config.models)
    pinned = f"pinned_load = {config.pinned_load}\n" if config.pinned_load is not None else ""
    return (
        "[target]\n"
        f'role = "{config.role}"\n'
        f'base_uri = "{config.base_uri}"\n'
        f'ca = "{rel(config.ca)}"\n'
        f"models = [{models}]\n"
        f"{pinned}"
        "\n[harness]\n"
        f'pki = "{rel(config.pki)}"\n'
        f'router = "{config.router}"\n'
        f'cache = "{config.cache}"\n'
        f"drafters = [{drafters}]\n"
    )


__all__ = ["DEFAULT_MODELS", "TargetConfig", "load_target", "render_target"]
