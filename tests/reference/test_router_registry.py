"""The router's instance registry: expiry, who may report, drafter and verifier choice, failure streaks.

Times are plain numbers passed in; every expectation follows from the status
values the test chooses (which drafter is strictly better on one axis).
"""

from __future__ import annotations

from typing import Any

import pytest

from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Contract, Status
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.router.registry import InstanceRegistry
from tests.reference.parties import DA, DB, DC, MODEL_1, MODEL_2, V1, V2


def contract(**changes: Any) -> Contract:
    base = {"target": bytes(32), "tokenizer": bytes(32), "rule": 1, "m_max": 4, "max_new": 8, "stop": [],
            "low_rounds": 1, "fallback": [2]}
    return Contract.from_obj(base | changes)


def status(instance: str, role: int = 1, **changes: Any) -> Status:
    return Status.from_obj({"instance": instance, "role": role, "load": 0, "queue": 0, "ttl_ms": 1000} | changes)


def registry() -> InstanceRegistry:
    return InstanceRegistry({DA: MODEL_1, DB: MODEL_2, DC: MODEL_1}, frozenset({V1, V2}))


def report(reg: InstanceRegistry, st: Status, now: float = 0.0) -> None:
    reg.accept(st, st.instance, now)


def test_expired_instances_are_never_chosen() -> None:
    reg = registry()
    report(reg, status(DA, ttl_ms=1000), now=10.0)
    report(reg, status(V1, role=2, ttl_ms=500), now=10.0)
    assert reg.choose_drafter(contract(), 10.999) == DA
    assert reg.ranked_verifiers(10.499) == [V1]
    # §6.1 "MUST NOT assign sessions to an instance whose status has expired" (D-RTR-3: at expiry).
    assert reg.choose_drafter(contract(), 11.0) is None
    assert reg.choose_drafter(contract(), 11.0, same_if_alone=DA) is None
    assert reg.ranked_verifiers(10.5) == []
    assert reg.failed(V1, 10.5)


def test_a_zero_ttl_never_makes_an_instance_eligible() -> None:
    reg = registry()
    report(reg, status(DA, ttl_ms=0), now=5.0)
    assert reg.choose_drafter(contract(), 5.0) is None


def test_a_later_report_renews_eligibility() -> None:
    reg = registry()
    report(reg, status(DA, ttl_ms=1000), now=0.0)
    report(reg, status(DA, ttl_ms=1000), now=0.9)
    assert reg.choose_drafter(contract(), 1.5) == DA


def test_status_is_accepted_only_from_the_instance_it_names() -> None:
    reg = registry()
    with pytest.raises(ProtocolError) as caught:
        reg.accept(status(DA), DB, 0.0)
    assert caught.value.problem is ProblemType.NOT_ASSIGNED
    assert reg.report(DA) is None


@pytest.mark.parametrize(
    ("instance", "role"),
    [("https://127.0.0.1:1/stranger/", 1), (DA, 2), (V1, 1)],
    ids=["unconfigured", "drafter-as-verifier", "verifier-as-drafter"],
)
def test_status_from_an_unconfigured_instance_or_role_is_refused(instance: str, role: int) -> None:
    reg = registry()
    with pytest.raises(ProtocolError) as caught:
        reg.accept(status(instance, role=role), instance, 0.0)
    assert caught.value.problem is ProblemType.NOT_ASSIGNED


@pytest.mark.parametrize(
    ("better", "worse"),
    [
        ({"load": 10}, {"load": 60}),
        ({"queue": 0}, {"queue": 3}),
        ({"accept_milli": 900}, {"accept_milli": 200}),
    ],
    ids=["load", "queue", "acceptance"],
)
def test_drafter_choice_prefers_low_load_low_queue_high_acceptance(
    better: dict[str, int], worse: dict[str, int]
) -> None:
    # The better drafter has the larger URI, so a choice by URI alone would pick the worse one.
    reg = InstanceRegistry({DA: MODEL_1, DC: MODEL_1}, frozenset())
    report(reg, status(DA, **worse))
    report(reg, status(DC, **better))
    assert reg.choose_drafter(contract(), 0.5) == DC


def test_drafter_choice_respects_the_contracts_drafters() -> None:
    reg = registry()
    report(reg, status(DA, load=0))
    report(reg, status(DB, load=90))
    assert reg.choose_drafter(contract(), 0.5) == DA  # drafters absent: any model
    assert reg.choose_drafter(contract(drafters=[MODEL_2]), 0.5) == DB
    assert reg.choose_drafter(contract(drafters=[bytes(32)]), 0.5) is None


def test_switch_excludes_the_current_drafter_or_keeps_it_when_alone() -> None:
    reg = registry()
    report(reg, status(DA, load=0))
    report(reg, status(DC, load=80))
    assert reg.choose_drafter(contract(), 0.5, exclude=[DA], same_if_alone=DA) == DC
    alone = InstanceRegistry({DA: MODEL_1}, frozenset())
    report(alone, status(DA))
    # P1-RTR-5: "switch with no other eligible drafter reassigns the same one".
    assert alone.choose_drafter(contract(), 0.5, exclude=[DA], same_if_alone=DA) == DA
    assert alone.choose_drafter(contract(), 0.5, exclude=[DA]) is None


def test_assignments_since_the_last_report_count_as_queue() -> None:
    reg = InstanceRegistry({DA: MODEL_1, DC: MODEL_1}, frozenset())
    report(reg, status(DA))
    report(reg, status(DC))
    first = reg.choose_drafter(contract(), 0.1)
    assert first == DA  # equal reports: the smaller URI
    reg.note_assigned(DA)
    assert reg.choose_drafter(contract(), 0.1) == DC
    report(reg, status(DA), now=0.2)  # a fresh report carries the drafter's own queue
    assert reg.choose_drafter(contract(), 0.3) == DA


def test_verifier_choice_prefers_low_load() -> None:
    reg = registry()
    report(reg, status(V1, role=2, load=70))
    report(reg, status(V2, role=2, load=20))
    assert reg.ranked_verifiers(0.5) == [V2, V1]
    assert reg.ranked_verifiers(0.5, exclude=[V2]) == [V1]


def verifier_with_failures(*times: float) -> InstanceRegistry:
    """A registry that V1 reported to (as a verifier, 60 s TTL) and then failed at each of ``times``."""
    reg = registry()
    report(reg, status(V1, role=2, ttl_ms=60_000))
    for now in times:
        reg.note_failure(V1, now)
    return reg


def test_three_failures_over_half_a_second_fail_a_verifier() -> None:
    reg = verifier_with_failures(1.0, 1.2, 1.4)
    assert not reg.failed(V1, 1.4)  # three in a row, but over 0.4 s only
    reg.note_failure(V1, 1.5)
    assert reg.failed(V1, 1.5)
    assert reg.ranked_verifiers(1.5) == []


def test_a_success_breaks_the_streak() -> None:
    reg = verifier_with_failures(1.0, 1.3)
    reg.note_success(V1)
    reg.note_failure(V1, 1.6)
    reg.note_failure(V1, 2.0)
    assert not reg.failed(V1, 2.0)  # only two in a row since the success


def test_two_failures_are_not_enough_however_long_apart() -> None:
    reg = verifier_with_failures(1.0, 5.0)
    assert not reg.failed(V1, 5.0)


def test_a_status_after_the_declaration_clears_it() -> None:
    reg = verifier_with_failures(1.0, 1.3, 1.6)
    assert reg.failed(V1, 1.7)
    report(reg, status(V1, role=2, ttl_ms=60_000), now=2.0)
    assert not reg.failed(V1, 2.1)


def test_a_success_after_the_declaration_does_not_clear_it() -> None:
    """D-RTR-6: a declared failure stands until a status report, whatever answers come meanwhile."""
    reg = verifier_with_failures(1.0, 1.3, 1.6)
    reg.note_success(V1)
    assert reg.failed(V1, 1.7) and reg.ranked_verifiers(1.7) == []
    report(reg, status(V1, role=2, ttl_ms=60_000), now=2.0)
    assert not reg.failed(V1, 2.1)


def test_a_status_before_the_declaration_does_not_clear_the_streak() -> None:
    reg = verifier_with_failures(1.0, 1.3)
    report(reg, status(V1, role=2, ttl_ms=60_000), now=1.4)
    reg.note_failure(V1, 1.6)
    assert reg.failed(V1, 1.6)
