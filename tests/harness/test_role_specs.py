"""One role spec per IUT role, one environment lifecycle: what each spec builds, and that nothing is copied per role.

The parties expected around each IUT role are written here from the design ("A verifier IUT meets the harness's
router, drafters and cache; a drafter IUT meets its router, verifier and cache; a router IUT meets its verifiers,
drafters and cache, and the P1-FRONT client"), not read from the specs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sdcp_conformance.harness.environment import RoleEnvironment
from sdcp_conformance.harness.role_spec import TARGET_FILE, spec_of
from sdcp_conformance.harness.suites import SUITES
from sdcp_conformance.harness.target import load_target
from sdcp_conformance.transport.pki import load_pki

HARNESS = Path(__file__).resolve().parents[2] / "sdcp_conformance" / "harness"

PLAYED = {
    "verifier": {"router", "cache", "drafter-1", "drafter-2"},
    "drafter": {"router", "cache", "verifier-1", "verifier-2"},
    "router": {"cache", "client", "verifier-1", "verifier-2", "verifier-3", "drafter-1", "drafter-2", "drafter-3"},
}

CONFIGURED_WITH = {
    "verifier": {"router"},  # P1-ID-2: the router it reports to and accepts router-only requests from
    "drafter": {"router", "cache"},  # P1-DRF-1: its router; the MLC base URI where it writes q_rows
    "router": PLAYED["router"] - {"client"},  # P1-TLS-2, P1-RTR-2: the MLC, every verifier and drafter
}


@pytest.mark.parametrize("role", sorted(PLAYED))
def test_the_embedded_target_puts_the_iut_and_every_played_party_on_its_own_loopback_port(role: str,
                                                                                        tmp_path: Path) -> None:
    spec = spec_of(role)
    target = spec.embedded_target(tmp_path)
    uris = spec.parties()  # fresh ports: only the names are compared with the target's
    assert set(uris) == PLAYED[role] | {spec.iut_party}
    assert target.role == role and target.embedded
    listeners = {target.router, target.cache, *target.verifiers, *target.drafters} - {""}
    pki = load_pki(target.pki)
    assert set(pki.base_uris) == PLAYED[role] | {spec.iut_party}
    assert pki.base_uris[spec.iut_party] == target.base_uri
    assert listeners <= {uri for name, uri in pki.base_uris.items() if name != spec.iut_party}
    ports = [uri.split(":")[2].split("/")[0] for uri in pki.base_uris.values()]
    assert len(set(ports)) == len(ports), "two parties share a port"


@pytest.mark.parametrize("role", sorted(PLAYED))
def test_pki_init_for_an_iut_writes_a_target_that_loads_and_tells_every_uri_it_needs(role: str,
                                                                                    tmp_path: Path) -> None:
    spec = spec_of(role)
    pki, path, instructions = spec.iut_setup(tmp_path, {"cache": "https://127.0.0.1:4431/cache/", "nobody": "x"})
    assert path == tmp_path / TARGET_FILE
    target = load_target(path)
    assert target.role == role and not target.embedded
    assert target.cache == "https://127.0.0.1:4431/cache/", "an override of a played party is kept"
    assert "nobody" not in pki.base_uris, "an override naming no party of the role is ignored"
    assert target.base_uri == pki.base_uris[spec.iut_party]
    assert target.base_uri in instructions
    for name in CONFIGURED_WITH[role]:
        assert pki.base_uris[name] in instructions, f"pki init --iut {role} does not say where {name} is"
    assert f"certify --target {path}" in instructions
    assert " ".join(spec.serve_command(pki)[:3]) == f"sdcp-conformance serve {role}"


@pytest.mark.parametrize("role", sorted(PLAYED))
def test_each_role_has_one_environment_class_under_the_one_lifecycle(role: str) -> None:
    environment = spec_of(role).environment
    assert issubclass(environment, RoleEnvironment) and environment.role == role
    for lifecycle in ("start", "_started", "stop", "serve", "new_link", "identities"):
        assert lifecycle not in vars(environment), \
            f"the {role} environment redefines {lifecycle}: the lifecycle is the one environment's"


def test_the_harness_has_no_role_prefixed_copies() -> None:
    roles = tuple(SUITES)
    top = [path.stem for path in HARNESS.glob("*.py")]
    assert not [name for name in top if name.startswith(tuple(f"{role}_" for role in roles))]
    for package in ("specs", "contexts"):
        assert {path.stem for path in (HARNESS / package).glob("*.py")} - {"__init__"} == set(roles)


def test_a_case_context_depends_on_the_parts_it_uses_not_on_the_environment_that_builds_it() -> None:
    for path in (HARNESS / "contexts").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not {module for module in imported if module.startswith("sdcp_conformance.harness.specs")}, path.name
