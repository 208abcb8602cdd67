"""The reference router applies a verifier's event after an assignment in flight (D-RTR-27).

A switch is about the drafter the verifier was told of last. When one arrives while the router is still
assigning (the new drafter has the assignment, the router has not recorded it yet), applying it at once would
drop the drafter before and could hand the session straight back to the one the switch was meant to leave: the
harness's RTR-6.5.2-SWITCH-001 caught this against a router in its own process on a busy machine.
"""

from __future__ import annotations

import asyncio

from sdcp_conformance.protocol.messages import Assignment
from sdcp_conformance.reference.frontend import RouterFrontend
from sdcp_conformance.reference.router.app import RouterApp, RouterConfig, instance_id
from tests.router.test_reference_front import (
    CACHE,
    CONTRACT,
    D0,
    MODEL,
    PROMPT,
    ROUTER,
    SESSION,
    V1,
    V2,
    Cache,
    Verifiers,
    call,
    run,
)

DRAFTERS = ("https://127.0.0.1:1/drafter-a/", "https://127.0.0.1:1/drafter-b/", "https://127.0.0.1:1/drafter-c/")


class HeldDrafters:
    """Drafters that take assignments, the ones after ``hold_from`` only once :attr:`release` is set."""

    def __init__(self, hold_from: int) -> None:
        self.assigned: list[str] = []
        self.hold_from = hold_from
        self.release = asyncio.Event()
        self.arrived = asyncio.Event()
        self.third = asyncio.Event()

    async def post_assignment(self, drafter: str, assignment: Assignment) -> None:
        self.assigned.append(drafter)
        if len(self.assigned) == 3:
            self.third.set()
        if len(self.assigned) >= self.hold_from:
            self.arrived.set()
            await self.release.wait()


async def _wait_for(condition: asyncio.Event) -> None:
    await asyncio.wait_for(condition.wait(), 10)


def test_a_switch_during_an_assignment_moves_the_session_off_the_drafter_being_assigned() -> None:
    async def scenario() -> None:
        drafters = HeldDrafters(hold_from=2)
        config = RouterConfig(base_uri=ROUTER, cache_base=CACHE, drafters=dict.fromkeys(DRAFTERS, MODEL),
                              verifiers=[V1, V2])
        handler = RouterFrontend(RouterApp(config, Verifiers(), drafters, Cache(), clock=lambda: 0.0))
        for uri, role in ((V1, 2), (V2, 2), *((drafter, 1) for drafter in DRAFTERS)):
            status = {"instance": uri, "role": role, "load": 0, "queue": 0, "ttl_ms": 60_000}
            assert (await call(handler, "PUT", f"instances/{instance_id(uri)}/status", status, uri))[0] == 204
        status, body = await call(handler, "POST", "client/sessions", {"contract": CONTRACT, "prompt": PROMPT,
                                                                       "session": SESSION})
        assert status == 201 and body["verifier"] == V1
        switch = {"session": SESSION, "epoch": 1, "kind": 2, "committed": 0, "digest": D0}
        assert (await call(handler, "POST", "events", switch, V1))[0] == 204
        await _wait_for(drafters.arrived)  # the second drafter has its assignment; the router awaits the answer
        being_assigned = drafters.assigned[1]
        assert (await call(handler, "POST", "events", switch, V1))[0] == 204  # answered while it is in flight
        drafters.release.set()
        await _wait_for(drafters.third)
        assert drafters.assigned[0] != being_assigned
        assert drafters.assigned[2] != being_assigned, (
            f"the switch sent while {being_assigned} was being assigned gave the session back to it: "
            f"{drafters.assigned}")

    run(scenario())
