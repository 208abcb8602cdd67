"""Every fault-injection switch of the MLC works, fires as often as asked, and shows in the transcript."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.append import AppendStatus, ConditionalAppendError, append_record
from sdcp_conformance.cache.clients import HandlerObjectClient
from sdcp_conformance.cache.commit_log import CommitRecord
from sdcp_conformance.cache.faults import FaultKind, FaultPlan
from sdcp_conformance.cache.transcript import Transcript
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.protocol.codec import decode_sequence, encode
from sdcp_conformance.transport.types import TransportFault
from tests.cache.conftest import FakeClock
from tests.cache.helpers import LOG, request, run

Q = "/q/rows-1"


class RecordingSleep:
    """Stands in for asyncio.sleep: records the delays asked for, waits for nothing."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def app(clock: FakeClock, sleep: RecordingSleep) -> CacheApp:
    made = CacheApp(transcript=Transcript(), clock=clock, sleep=sleep)
    run(made(request("PUT", Q, b"\x00\x00\x80\x3f", {"SDCP-Lease": "60000"})))
    assert made.transcript is not None
    made.transcript.clear()
    return made


def get(app: CacheApp, path: str = Q) -> int:
    return run(app(request("GET", path))).status


def faults_in_transcript(app: CacheApp) -> list[tuple[str, str, int, tuple[str, ...]]]:
    assert app.transcript is not None
    return [(e.method, e.path, e.status, e.faults) for e in app.transcript.entries]


def test_fail_gets_answers_the_next_n_gets_with_the_status_then_recovers(app: CacheApp) -> None:
    app.faults.fail_gets(Q, 2, status=500)
    assert [get(app), get(app), get(app)] == [500, 500, 200]
    assert [f.kind for f in app.faults.fired] == [FaultKind.FAIL_GET] * 2
    assert faults_in_transcript(app) == [
        ("GET", Q, 500, ("fail-get: status 500",)),
        ("GET", Q, 500, ("fail-get: status 500",)),
        ("GET", Q, 200, ()),
    ]


def test_faults_apply_only_to_their_path(app: CacheApp) -> None:
    run(app(request("PUT", "/other", b"x")))
    app.faults.fail_gets(Q)
    assert get(app, "/other") == 200
    assert get(app) == 503
    assert get(app) == 200


def test_a_fault_for_every_path_matches_the_first_request_of_any_path(app: CacheApp) -> None:
    run(app(request("PUT", "/other", b"x")))
    app.faults.missing_gets(None)
    assert get(app, "/other") == 404
    assert get(app) == 200


def test_missing_gets_answers_404_although_the_object_exists(app: CacheApp) -> None:
    app.faults.missing_gets(Q, 1)
    faked = run(app(request("GET", Q)))
    assert faked.status == 404
    assert get(app) == 200
    assert faults_in_transcript(app)[0][3] == ("missing-get: status 404",)
    # The fake miss looks exactly like a real one.
    real = run(app(request("GET", "/q/none")))
    assert faked.body.replace(Q.encode(), b"/q/none") == real.body


def test_transport_gets_asks_the_server_to_commit_the_fault(app: CacheApp) -> None:
    app.faults.transport_gets(Q, 1, fault=TransportFault.GOAWAY)
    response = run(app(request("GET", Q)))
    assert response.fault is TransportFault.GOAWAY
    assert get(app) == 200
    assert app.transcript is not None
    first = app.transcript.entries[0]
    assert first.transport_fault == "goaway"
    assert first.faults == ("transport-get: transport fault goaway",)


def test_delay_holds_back_the_response_after_handling(app: CacheApp, sleep: RecordingSleep) -> None:
    app.faults.delay(Q, 1.5, 2)
    assert run(app(request("PUT", Q, b"new"))).status == 204
    assert get(app) == 200
    assert get(app) == 200
    assert sleep.calls == [1.5, 1.5]
    assert [entry[3] for entry in faults_in_transcript(app)] == [
        ("delay: delay 1.5 s",),
        ("delay: delay 1.5 s",),
        (),
    ]


def test_delay_combines_with_a_terminal_fault(app: CacheApp, sleep: RecordingSleep) -> None:
    app.faults.delay(Q, 0.25)
    app.faults.fail_gets(Q)
    assert get(app) == 503
    assert sleep.calls == [0.25]
    assert faults_in_transcript(app)[0][3] == ("delay: delay 0.25 s", "fail-get: status 503")


def test_only_one_terminal_fault_fires_per_request_in_arming_order(app: CacheApp) -> None:
    app.faults.fail_gets(Q, status=502)
    app.faults.missing_gets(Q)
    assert [get(app), get(app), get(app)] == [502, 404, 200]


def test_drop_lease_evicts_a_leased_object_before_its_lease_ends(app: CacheApp, clock: FakeClock) -> None:
    clock.advance(1.0)  # well inside the 60 s lease
    app.faults.drop_lease(Q)
    assert get(app) == 404
    assert get(app) == 404  # gone for good, not a one-off answer
    assert app.store.get(Q, clock()) is None
    [firing] = app.faults.fired
    assert (firing.kind, firing.method, firing.path) == (FaultKind.DROP_LEASE, "GET", Q)
    assert faults_in_transcript(app)[0] == ("GET", Q, 404, ("drop-lease: drop-lease",))


def test_reject_appends_refuses_the_put_and_stores_nothing(app: CacheApp) -> None:
    client = HandlerObjectClient(app)
    record = CommitRecord(1, 1, (5,), 1, b"\x33" * 32)
    run(append_record(client, "https://mlc/" + LOG.lstrip("/"), record))
    before = run(app(request("GET", LOG))).body
    app.faults.reject_appends(LOG, 1, status=507)
    with pytest.raises(ConditionalAppendError, match="PUT answered 507"):
        run(append_record(client, "https://mlc" + LOG, CommitRecord(1, 2, (6,), 2, b"\x33" * 32)))
    assert run(app(request("GET", LOG))).body == before
    rejected = [e for e in faults_in_transcript(app) if e[3]]
    assert rejected == [("PUT", LOG, 507, ("reject-append: status 507",))]
    # GETs are not appends: reject_appends never touches them.
    assert all(f.method == "PUT" for f in app.faults.fired)


def test_firings_are_numbered_in_order_and_armed_faults_are_listed(app: CacheApp) -> None:
    first = app.faults.fail_gets(Q)
    second = app.faults.missing_gets(Q, 3)
    get(app)
    get(app)
    assert [(f.sequence, f.fault_id) for f in app.faults.fired] == [(1, first), (2, second)]
    [left] = app.faults.armed
    assert (left.fault_id, left.remaining) == (second, 2)
    app.faults.disarm(second)
    assert app.faults.armed == []
    assert get(app) == 200


def test_disarm_all(app: CacheApp) -> None:
    app.faults.fail_gets(Q)
    app.faults.delay(None, 1.0)
    app.faults.disarm()
    assert get(app) == 200
    assert app.faults.fired == []


@pytest.mark.parametrize(
    "arm",
    [
        lambda plan: plan.fail_gets("/x", 0),
        lambda plan: plan.fail_gets("/x", status=200),
        lambda plan: plan.reject_appends("/x", status=302),
        lambda plan: plan.delay("/x", -1.0),
    ],
)
def test_nonsensical_faults_are_refused(arm: Callable[[FaultPlan], object]) -> None:
    with pytest.raises(InvalidArgument):
        arm(FaultPlan())


def test_an_inserted_fence_makes_the_racing_append_re_read_and_stop(app: CacheApp) -> None:
    """Plain insertion: another writer's fence lands first, the If-Match PUT gets 412 (P1-LOG-1)."""
    client = HandlerObjectClient(app)
    run(append_record(client, "https://mlc" + LOG, CommitRecord(1, 1, (5,), 1, b"\x33" * 32)))
    app.faults.insert_before_put(LOG, encode({"epoch": 2}))
    outcome = run(append_record(client, "https://mlc" + LOG, CommitRecord(1, 2, (6,), 2, b"\x33" * 32)))
    assert outcome.status is AppendStatus.FENCED and outcome.conflicts == 1
    stored = app.store.get(LOG, 0.0)
    assert stored is not None and decode_sequence(stored.data)[-1] == {"epoch": 2}
    assert [kind for _, _, _, kinds in faults_in_transcript(app) for kind in kinds if "insert" in kind]


def test_a_spliced_fence_is_only_visible_to_a_read_back(app: CacheApp) -> None:
    """Spliced insertion plays a cache that neither fences nor appends atomically (§6.8)."""
    app.enforce_fences = False
    client = HandlerObjectClient(app)
    run(append_record(client, "https://mlc" + LOG, CommitRecord(1, 1, (5,), 1, b"\x33" * 32)))
    app.faults.insert_before_put(LOG, encode({"epoch": 2}), splice=True)
    blind = run(append_record(client, "https://mlc" + LOG, CommitRecord(1, 2, (6,), 2, b"\x33" * 32),
                              read_back=False))
    assert blind.status is AppendStatus.APPENDED  # a writer that does not read back is fooled
    stored = app.store.get(LOG, 0.0)
    assert stored is not None
    assert [item.get("round") for item in decode_sequence(stored.data)] == [1, None, 2]
    app.faults.insert_before_put(LOG, encode({"epoch": 3}), splice=True)
    careful = run(append_record(client, "https://mlc" + LOG, CommitRecord(2, 3, (7,), 3, b"\x33" * 32)))
    assert careful.status is AppendStatus.FENCED  # the read-back sees the fence before its record


def test_a_hold_keeps_the_bodies_it_held_and_stores_them_once_opened(app: CacheApp) -> None:
    """A case reads what a held append would write (VER-6.5-ESC-020 tells a retried append from a new one)."""

    async def go() -> tuple[list[bytes], int]:
        gate = app.faults.hold(LOG, methods=frozenset({"PUT"}))
        putting = asyncio.ensure_future(app(request("PUT", LOG, b"\xa1\x65epoch\x01")))
        assert await gate.wait_arrival(5.0)
        held = list(gate.bodies)
        assert not putting.done()  # held before handling: nothing stored yet
        gate.open()
        return held, (await putting).status

    bodies, status = run(go())
    assert bodies == [b"\xa1\x65epoch\x01"] and 200 <= status < 300
    assert decode_sequence(run(app(request("GET", LOG))).body) == [{"epoch": 1}]
