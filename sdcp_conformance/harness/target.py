"""The target description: what is tested and how to reach it (a TOML file, or the embedded default).

```toml
[target]
role = "verifier"
base_uri = "https://127.0.0.1:9443/"
ca = "pki/ca.pem"            # trusts the IUT's server certificate
models = ["bigram", "ctx"]   # mock models the IUT serves (manifest ids); `model = "bigram"` also works
http = "2"                   # optional: "2" (HTTP/2 on TCP), "3" (HTTP/3 on UDP) or "both" (each base URI's port)
load = "reported"            # how the IUT's load is known: "reported" (its verdicts and status say it) or
pinned_load = 10             # "pinned", with the value the IUT was started with (§6.5.2 self_decode branches)
load_hook = "https://127.0.0.1:9443/test-control/load"  # optional: the harness sets the load (PUT {"load": N}),
# load_command = "my-tool set-load {load}"               # or runs this; either lets VER-6.5-ESC-009 run
request_timeout_s = 5        # optional: deadline of every request but the output long poll
output_timeout_s = 35        # optional: deadline of GET …/output (P1-OUT-1's 30 s plus a margin)
max_response_bytes = 16777216  # optional: the largest response body read

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.registry import load_manifest
from sdcp_conformance.transport.listeners import DEFAULT_HTTP, HttpVersions, http_versions

DEFAULT_MODELS = ("bigram", "ctx")


@dataclass(frozen=True)
class TargetConfig:
    role: str
    base_uri: str
    ca: Path
    models: tuple[str, ...]
    pki: Path
    router: str = ""
    cache: str = ""
    drafters: tuple[str, ...] = ()
    verifiers: tuple[str, ...] = ()
    """[harness] verifiers: the verifiers the harness plays (certifying a drafter or a router)."""
    pinned_load: int | None = None
    load_hook: str = ""
    """[target] load_hook: an https:// URI the harness PUTs ``{"load": N}`` to (:mod:`.load_control`)."""
    load_command: str = ""
    """[target] load_command: a command with ``{load}`` the harness runs to set the load (:mod:`.load_control`)."""
    request_timeout_s: float = 5.0
    """Deadline of every request to the IUT except the output long poll ([target] request_timeout_s)."""
    output_timeout_s: float = 35.0
    """Deadline of ``GET …/output``: P1-OUT-1's 30 s wait plus a margin ([target] output_timeout_s)."""
    max_response_bytes: int = 16 << 20
    """Largest response body read from the IUT; the codec's 16 MiB by default ([target] max_response_bytes)."""
    http: HttpVersions = DEFAULT_HTTP
    """[target] http: what the IUT's listener and the harness's parties speak, "2", "3" or "both" (§5.1)."""
    source: Path | None = None
    """The TOML file this came from; None for the embedded default."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def embedded(self) -> bool:
        return self.source is None


TARGET_KEYS = frozenset({"role", "base_uri", "ca", "models", "model", "pinned_load", "load", "request_timeout_s",
                         "output_timeout_s", "max_response_bytes", "load_hook", "load_command", "http"})
LOAD_MODES = ("reported", "pinned")


def _roles() -> tuple[str, ...]:
    from sdcp_conformance.harness.suites import SUITES

    return tuple(SUITES)


ROLES = _roles()
"""Roles a target file may name (each has a suite, :mod:`sdcp_conformance.harness.suites`)."""


def load_target(path: Path) -> TargetConfig:
    """Read and check a target TOML file; every error is one line naming the file and the member."""
    from sdcp_conformance.harness.suites import role_suite

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArgument(f"{path}: cannot read the target file: {exc}") from exc
    unknown_tables = sorted(set(raw) - {"target", "harness"})
    if unknown_tables:
        raise InvalidArgument(f"{path}: unknown table(s) {unknown_tables}; a target file has [target] and [harness]")
    target, harness = _table(raw, "target", path), _table(raw, "harness", path)
    _known_keys(target, TARGET_KEYS, path, "target")
    folder = path.resolve().parent
    role = _text(target, "role", path, "target")
    if role not in ROLES:
        raise InvalidArgument(f"{path}: [target] role {role!r} is not supported (known: {', '.join(ROLES)})")
    suite = role_suite(role)
    _known_keys(harness, suite.harness_keys, path, "harness")
    models = target.get("models", [target["model"]] if "model" in target else [])
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise InvalidArgument(f"{path}: [target] models must be a list of mock model ids")
    if suite.serves != "none" and not models:
        raise InvalidArgument(f"{path}: [target] needs `models = [\"…\"]` (the mock models the IUT serves)")
    check_models(models, path, serves=suite.serves)
    pinned = target.get("pinned_load")
    if pinned is not None and (isinstance(pinned, bool) or not isinstance(pinned, int) or not 0 <= pinned <= 100):
        raise InvalidArgument(f"{path}: [target] pinned_load must be an integer in 0..100")
    load = target.get("load", "pinned" if pinned is not None else "reported")
    if load not in LOAD_MODES:
        raise InvalidArgument(f"{path}: [target] load must be one of {LOAD_MODES} (how the IUT's load is known)")
    if load == "pinned" and pinned is None:
        raise InvalidArgument(f"{path}: [target] load = \"pinned\" needs pinned_load = <0..100>")
    load_hook, load_command = _load_control(target, role, path)
    if role == "drafter":
        _check_drafter(target, harness, path)
    if role == "router":
        _check_router(target, harness, path)
    return TargetConfig(
        role=role,
        base_uri=_uri(target, "base_uri", path, "target"),
        ca=folder / _text(target, "ca", path, "target"),
        models=tuple(models),
        pki=folder / _text(harness, "pki", path, "harness"),
        router=_uri(harness, "router", path, "harness") if "router" in suite.harness_keys else "",
        cache=_uri(harness, "cache", path, "harness") if "cache" in suite.harness_keys else "",
        drafters=_uris(harness, "drafters", path) if "drafters" in suite.harness_keys else (),
        verifiers=_uris(harness, "verifiers", path) if "verifiers" in suite.harness_keys else (),
        pinned_load=pinned,
        load_hook=load_hook,
        load_command=load_command,
        request_timeout_s=_positive(target, "request_timeout_s", 5.0, path),
        output_timeout_s=_positive(target, "output_timeout_s", 35.0, path),
        max_response_bytes=int(_positive(target, "max_response_bytes", 16 << 20, path)),
        http=http_versions(target.get("http", DEFAULT_HTTP), f"{path}: [target] http"),
        source=path,
        extra={key: value for key, value in harness.items()
               if key not in {"pki", "router", "cache", "drafters", "verifiers"}},
    )


def _load_control(target: dict[str, Any], role: str, path: Path) -> tuple[str, str]:
    """[target] load_hook / load_command: how the harness sets a verifier's load (at most one of them)."""
    from sdcp_conformance.harness.load_control import check_load_command, check_load_hook

    hook, command = target.get("load_hook", ""), target.get("load_command", "")
    if not isinstance(hook, str) or not isinstance(command, str):
        raise InvalidArgument(f"{path}: [target] load_hook and load_command are strings")
    if (hook or command) and role != "verifier":
        raise InvalidArgument(f"{path}: [target] load_hook / load_command set a verifier's load; a {role} has none "
                              "the harness sets")
    if hook and command:
        raise InvalidArgument(f"{path}: [target] give load_hook or load_command, not both")
    return (check_load_hook(hook, str(path)) if hook else "", check_load_command(command, str(path)) if command
            else "")


def _check_drafter(target: dict[str, Any], harness: dict[str, Any], path: Path) -> None:
    """A drafter target: the harness plays its router, MLC and (at least two) verifiers at distinct base URIs;
    ``proposal_timeout_s`` (optional) is the drafter's own deadline for a verdict, which lets the harness run
    the case that loses a verdict by silence (P1-DRF-5)."""
    timeout = harness.get("proposal_timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not 0 < timeout <= 300):
        raise InvalidArgument(f"{path}: [harness] proposal_timeout_s must be a number of seconds in (0, 300]")
    verifiers = harness.get("verifiers")
    named = [target.get("base_uri"), harness.get("router"), harness.get("cache"),
             *(verifiers if isinstance(verifiers, list) else [])]
    if len(set(named)) != len(named):
        raise InvalidArgument(f"{path}: the drafter and the harness's router, cache and verifiers need distinct "
                              "base URIs")


def _check_router(target: dict[str, Any], harness: dict[str, Any], path: Path) -> None:
    """A router target: the harness plays its MLC, verifiers and drafters at distinct base URIs, and
    ``drafter_models`` names each drafter's draft mock model (the router knows it by configuration, P1-RTR-2)."""
    drafters = harness.get("drafters")
    models = harness.get("drafter_models")
    if not isinstance(models, list) or not isinstance(drafters, list) or len(models) != len(drafters):
        raise InvalidArgument(f"{path}: [harness] drafter_models must name one draft mock model per drafter")
    check_models(models, path, serves="draft")
    verifiers = harness.get("verifiers")
    named = [target.get("base_uri"), harness.get("cache"), *drafters,
             *(verifiers if isinstance(verifiers, list) else [])]
    if len(set(named)) != len(named):
        raise InvalidArgument(f"{path}: the router and the harness's cache, verifiers and drafters need distinct "
                              "base URIs")


def _uris(table: dict[str, Any], key: str, path: Path, minimum: int = 2) -> tuple[str, ...]:
    values = table.get(key)
    if not isinstance(values, list) or len(values) < minimum or not all(isinstance(v, str) for v in values):
        raise InvalidArgument(f"{path}: [harness] {key} must list at least {minimum} base URIs")
    for value in values:
        if not value.startswith("https://") or not value.endswith("/"):
            raise InvalidArgument(f"{path}: [harness] {key}: {value!r} is not an https base URI ending in '/' "
                                  "(P1-ID-1)")
    return tuple(values)


def check_models(models: list[str] | tuple[str, ...], where: Path | str, *, serves: str = "target") -> None:
    """Every name is a shipped mock model (P1-MODEL-1) of the kind an IUT of this role serves.

    ``serves`` is ``target`` (a verifier), ``draft`` (a drafter) or ``none`` (a router serves no model).
    """
    manifest = load_manifest()
    fitting = sorted(model_id for model_id, model in manifest.models.items() if model.role == serves)
    for model in models:
        if model not in manifest.models:
            raise InvalidArgument(f"{where}: unknown model {model!r} (known: {', '.join(sorted(manifest.models))})")
        if serves == "none":
            raise InvalidArgument(f"{where}: this role serves no model; remove `models`")
        if model not in fitting:
            raise InvalidArgument(f"{where}: {model!r} is not a {serves} model; an IUT of this role serves "
                                  f"{', '.join(fitting)}")


def require_models(config: TargetConfig, needing: Mapping[str, Sequence[str]]) -> None:
    """The target serves every model the selected cases need, or the run is a usage error (P1-JUDGE-3).

    ``needing`` maps each model to the IDs of the cases that need it (empty for a model every case needs); the
    error names them, so that a user whose IUT serves fewer models knows what to leave out.
    """
    missing = sorted(set(needing) - set(config.models))
    if not missing:
        return
    where = config.source if config.source is not None else "the embedded target"
    message = (f"{where}: the suite needs the model(s) {', '.join(missing)}, which the target does not list "
               f"(models = {list(config.models)})")
    if any(not needing[model] for model in missing):
        raise InvalidArgument(f"{message}; every case needs {', '.join(m for m in missing if not needing[m])}: "
                              f"serve it")
    cases = sorted({case for model in missing for case in needing[model]})
    raise InvalidArgument(f"{message}; serve them, or leave out the {len(cases)} case(s) that need them: "
                          + " ".join(f"--exclude {case}" for case in cases))


def _known_keys(table: dict[str, Any], known: frozenset[str], path: Path, where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise InvalidArgument(f"{path}: [{where}] has unknown key(s) {unknown} (known: {', '.join(sorted(known))})")


def _positive(table: dict[str, Any], key: str, default: float, path: Path) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InvalidArgument(f"{path}: [target] {key} must be a positive number")
    return float(value)


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

    def listed(values: tuple[str, ...]) -> str:
        return ", ".join(f'"{value}"' for value in values)

    lines = ["[target]", f'role = "{config.role}"', f'base_uri = "{config.base_uri}"', f'ca = "{rel(config.ca)}"']
    if config.models:
        lines.append(f"models = [{listed(config.models)}]")
    if config.http != DEFAULT_HTTP:
        lines.append(f'http = "{config.http}"')
    if config.pinned_load is not None:
        lines.append(f"pinned_load = {config.pinned_load}")
    if config.load_hook:
        lines.append(f"load_hook = {_toml_value(config.load_hook)}")
    if config.load_command:
        lines.append(f"load_command = {_toml_value(config.load_command)}")
    lines += ["", "[harness]", f'pki = "{rel(config.pki)}"']
    for key in ("router", "cache"):
        value = getattr(config, key)
        if value:
            lines.append(f'{key} = "{value}"')
    for key in ("drafters", "verifiers"):
        values = getattr(config, key)
        if values:
            lines.append(f"{key} = [{listed(values)}]")
    for key, value in config.extra.items():
        lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {_toml_value(item)}" for key, item in value.items()) + " }"
    raise InvalidArgument(f"cannot write {value!r} into a target file")


__all__ = ["DEFAULT_MODELS", "ROLES", "TargetConfig", "check_models", "load_target", "render_target",
           "require_models"]
