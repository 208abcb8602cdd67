"""The one catalogue scaffold: every role's mutants declared on one :class:`Catalogue`, names unique across roles,
a declared bug put where the reference's class it subclasses goes, and a mutant found by name."""

from __future__ import annotations

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.mutants.base import DrafterMutant, MutantApp, MutantSession, RouterMutant, VerifierMutant
from sdcp_conformance.mutants.catalogue import ROLES, Catalogue, catalogue, find_mutant, get_mutant, killers_path
from sdcp_conformance.reference.drafter.session import DrafterSession
from sdcp_conformance.reference.router.driver import SessionDriver
from sdcp_conformance.reference.router.registry import InstanceRegistry

KINDS = {"verifier": VerifierMutant, "drafter": DrafterMutant, "router": RouterMutant}


def test_every_role_has_its_catalogue_of_its_own_mutants_and_a_control_outside_it() -> None:
    names: list[str] = []
    for role in ROLES:
        found = catalogue(role)
        assert found.role == role and len(found) == len(found.mutants) >= 12
        assert all(type(mutant) is KINDS[role] for mutant in (*found.mutants, found.control))
        assert found.control.name not in found and found.control.area == "none"
        assert found.killers_path == killers_path(role) and found.killers_path.exists()
        names += list(found)
    assert len(names) == len(set(names)), "mutant names must be unique across roles"


def test_a_mutant_is_found_by_name_in_its_role_or_in_every_role() -> None:
    assert find_mutant("drf-no-delete") == ("drafter", catalogue("drafter")["drf-no-delete"])
    assert get_mutant("digest-little-endian") is catalogue("verifier")["digest-little-endian"]
    with pytest.raises(InvalidArgument, match=r"no mutant named 'drf-no-delete'.*the verifier's"):
        get_mutant("drf-no-delete")
    with pytest.raises(InvalidArgument, match="no mutant named 'nosuch'"):
        catalogue("router").find("nosuch")


def test_a_declared_bug_goes_where_the_class_it_subclasses_goes() -> None:
    declared = Catalogue(VerifierMutant.unmutated("control", "none planted"))

    @declared.mutant("in-session", "area", "a session bug", "6.3", "a sentence")
    class InSession(MutantSession):
        pass

    @declared.mutant("in-app", "area", "an app bug", "6.3", "a sentence", profile_only=True, session=InSession)
    class InApp(MutantApp):
        pass

    def wrapper(cache: object) -> object:
        return cache

    declared.mutant("in-cache", "area", "a cache bug", "6.8", "a sentence", into="wrap_cache")(wrapper)
    assert list(declared) == ["in-session", "in-app", "in-cache"]
    assert declared["in-session"].session is InSession and declared["in-session"].app is MutantApp
    assert declared["in-app"].app is InApp and declared["in-app"].session is InSession
    assert declared["in-app"].profile_only and declared["in-cache"].wrap_cache is wrapper
    with pytest.raises(TypeError, match="say which field"):
        declared.mutant("unplaced", "area", "a bug", "6.3", "a sentence")(wrapper)
    with pytest.raises(ValueError, match="two verifier mutants"):
        declared.mutant("in-session", "area", "again", "6.3", "a sentence")(InSession)
    with pytest.raises(TypeError, match="a drafter mutant"):
        declared.add(DrafterMutant("drf-x", "area", "a bug", "6.2", "a sentence"))


def test_each_role_places_the_classes_its_reference_is_built_from() -> None:
    class Session(DrafterSession):
        pass

    class Driver(SessionDriver):
        pass

    class Registry(InstanceRegistry):
        pass

    assert DrafterMutant.field_for(Session) == "session"
    assert RouterMutant.field_for(Driver) == "driver" and RouterMutant.field_for(Registry) == "registry"
    with pytest.raises(TypeError, match="no model"):
        RouterMutant("r", "area", "a bug", "6.9", "a sentence", wrap_model=lambda model: model)
