"""Talking to the implementation under test as one of the harness's identities, with a transcript.

Every call has a deadline by resource: ``GET …/output`` gets P1-OUT-1's long
poll plus a margin (``output_timeout_s``), every other request the target's
``request_timeout_s``; responses are read up to ``max_response_bytes`` and no
further. A timeout, a refused handshake or a dropped connection comes back as
an :class:`Answer` with ``failure`` set, never as an exception, so a case can
judge it — with the :class:`~sdcp_conformance.transport.failures.Stage` the
conversation broke at and the evidence seen there. The transport is the
project's own HTTP/2 client (:class:`~sdcp_conformance.transport.h2client.H2Client`),
one per identity, the same client the reference roles use.

Every exchange lands in the current case's transcript with the answer's
content type; the note carries the stage and evidence of a failure, the TLS
version and ALPN of every new connection, and body sizes where they matter.
A request still in flight when its case is cancelled is recorded too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sdcp_conformance.harness.features import message_features
from sdcp_conformance.harness.patience import Patience
from sdcp_conformance.harness.self_check import refuse_request
from sdcp_conformance.harness.transcript import CaseTranscript, DeadlineMiss
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Message
from sdcp_conformance.protocol.problems import (
    PROBLEM_CBOR_MEDIA_TYPE,
    PROBLEM_MEDIA_TYPE,
    SDCP_MEDIA_TYPE,
    ProblemType,
)
from sdcp_conformance.transport.exchange import MAX_RESPONSE_BYTES, Timeouts, media_type
from sdcp_conformance.transport.failures import ConnectionInfo, Evidence, FailureKind, Stage, TransportFailure
from sdcp_conformance.transport.h2client import H2Client
from sdcp_conformance.transport.listeners import DEFAULT_HTTP, HttpVersions, client_for
from sdcp_conformance.transport.problem import Problem, parse_problem

M = TypeVar("M", bound=Message)

REQUEST_TIMEOUT_S = 5.0
"""Deadline of every request but the output long poll (the target's ``request_timeout_s``)."""
OUTPUT_TIMEOUT_S = 35.0
"""Deadline of ``GET …/output``: the 30 s the harness allows the long poll (P1-OUT-1) plus a margin."""
DEFAULT_TIMEOUTS = Timeouts(connect=REQUEST_TIMEOUT_S, read=OUTPUT_TIMEOUT_S, write=10.0, total=OUTPUT_TIMEOUT_S)
"""Kept for callers that build clients like the harness's (the connect part bounds TCP, TLS and SETTINGS)."""
PROBLEM_MEDIA_TYPES = (PROBLEM_MEDIA_TYPE, PROBLEM_CBOR_MEDIA_TYPE)
LOST_STAGES = frozenset({Stage.GOAWAY, Stage.CONNECTION_LOST})
"""Where a request the IUT admitted ends unanswered because its connection ended (a GOAWAY of any code, a close,
a reset connection): P1-JUDGE-6 has it sent again."""
BUSY_STATUSES = frozenset({429, 503})
"""D-JUDGE-TIME-4: "too many requests" and "service unavailable" say the IUT is busy, not that it refuses: like a
missed deadline, evidence of load (P1-DRF-5 has a drafter retry both), so a case that does not pass after one runs
again alone."""
MAX_LOST_RESENDS = 3
"""D-JUDGE-LOST-1: a lost answer is asked for again on a new connection at most this many times while the IUT
answers nothing else meanwhile; then the failure stands and is judged as before (a server that drops every
connection under every request serves nothing). While it answers other requests between the losses (a server
shedding connections under load: hypercorn's keep-alive limit with a hundred requests in flight), it is asked
again for up to :data:`LOST_RESEND_BUDGET_S`, as P1-DRF-5 has a drafter retry for at least 30 s."""
LOST_RESEND_BUDGET_S = 30.0


def is_output_poll(method: str, path: str) -> bool:
    """``GET sessions/{id}/output?from=n``: the one resource that may wait (P1-OUT-1)."""
    return method == "GET" and path.split("?", 1)[0].rstrip("/").endswith("/output")


@dataclass(frozen=True)
class Answer:
    """What the IUT answered (or how the exchange failed, at which stage, with what evidence)."""

    status: int | None
    body: bytes
    content_type: str | None
    failure: FailureKind | None = None
    failure_detail: str = ""
    stage: Stage | None = None
    """Where the exchange broke (``None`` when it did not)."""
    evidence: Evidence | None = None
    """What was observed at the failing stage: alert, error code, last_stream_id, status, sizes, deadline."""
    connection: ConnectionInfo | None = None
    """The connection the exchange used (or failed on): its number, TLS version and ALPN."""
    headers: tuple[tuple[str, str], ...] = ()
    deadline_s: float | None = None
    """The deadline the request had (by resource)."""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def lost(self) -> bool:
        """The IUT admitted the request and its connection ended before any of the answer came (P1-JUDGE-6)."""
        return (self.status is None and self.failure is FailureKind.CONNECTION_LOST and self.stage in LOST_STAGES
                and (self.evidence is None or self.evidence.status is None))

    @property
    def timed_out(self) -> bool:
        """The harness's deadline expired on the request (P1-JUDGE-5: evidence of time, not of a deviation)."""
        return self.status is None and self.failure is FailureKind.TIMEOUT

    @property
    def problem(self) -> Problem | None:
        if self.status is None or self.ok:
            return None
        try:
            return parse_problem(self.status, self.content_type, self.body)
        except MalformedMessage:
            return None

    @property
    def problem_type(self) -> ProblemType | None:
        problem = self.problem
        return problem.problem_type if problem is not None else None

    # -- media types (§5.1, P1-MSG-1, P1-ERR-1): data for the judge ------------------------------

    @property
    def media_type(self) -> str:
        """The body's media type, lower-cased, without parameters ("" when unlabelled)."""
        return media_type(self.content_type)

    @property
    def media_type_ok(self) -> bool | None:
        """For a 2xx answer: whether its body is labelled ``application/sdcp+cbor`` (§5.1; an empty body needs
        no label). ``None`` for anything that is not a success."""
        if not self.ok:
            return None
        return not self.body or self.media_type == SDCP_MEDIA_TYPE

    @property
    def problem_media_type_ok(self) -> bool | None:
        """For a 4xx/5xx answer with a body: whether it is labelled ``application/problem+json`` or ``+cbor``
        (P1-ERR-1). ``None`` for anything else."""
        if self.status is None or self.status < 400 or not self.body:
            return None
        return self.media_type in PROBLEM_MEDIA_TYPES

    @property
    def problem_type_uri_ok(self) -> bool | None:
        """For a refusal whose problem ``type`` names an SDCP type: whether it is the whole URN P1-ERR-1 gives
        (``urn:ietf:params:sdcp:problem:<suffix>``), not only the suffix the harness matches it by. ``None``
        for anything else."""
        problem = self.problem
        if problem is None or problem.problem_type is None:
            return None
        return problem.type_uri == problem.problem_type.uri

    # -- sizes and the connection ----------------------------------------------------------------

    @property
    def content_length(self) -> int | None:
        """The declared content-length of the answer (or of the half-received one a failure cut short)."""
        value = next((v for k, v in self.headers if k == "content-length"), None)
        if value is not None and value.isdigit():
            return int(value)
        return self.evidence.content_length if self.evidence is not None else None

    @property
    def received(self) -> int:
        """Body bytes received (for a failure: before it broke)."""
        if self.status is not None:
            return len(self.body)
        return (self.evidence.received or 0) if self.evidence is not None else 0

    @property
    def tls_version(self) -> str | None:
        if self.connection is not None and self.connection.tls_version:
            return self.connection.tls_version
        return self.evidence.tls_version if self.evidence is not None else None

    @property
    def alpn(self) -> str | None:
        if self.connection is not None and self.connection.alpn:
            return self.connection.alpn
        return self.evidence.alpn if self.evidence is not None else None

    @property
    def peer_uris(self) -> tuple[str, ...] | None:
        """The URI SANs of the certificate the IUT presented on the answering connection; ``None`` when no
        connection answered."""
        return self.connection.peer_uris if self.connection is not None else None

    # -- bodies ----------------------------------------------------------------------------------

    def decoded(self) -> Any:
        return decode(self.body)

    def message(self, kind: type[M]) -> M:
        """The body as a typed message; raises :class:`MalformedMessage` if it is not one.

        D-IUT-1: the media type is part of being a message. How strictly a wrong label is judged elsewhere
        (a problem body's, P1-ERR-1, NON-STRICT) is the judge's, from :attr:`media_type_ok` and
        :attr:`problem_media_type_ok`.

        A body not labelled ``application/sdcp+cbor`` is not an SDCP message, whatever its bytes
        (§5.1: "Message bodies use the media type application/sdcp+cbor").
        """
        if self.media_type != SDCP_MEDIA_TYPE:
            raise MalformedMessage(f"the body is labelled {self.content_type!r}, not {SDCP_MEDIA_TYPE} (§5.1)")
        return kind.from_cbor(self.body)

    def describe(self) -> str:
        if self.status is None:
            label = self.stage.label if self.stage is not None else (self.failure.value if self.failure else "failure")
            return f"no answer ({label}: {self.failure_detail})"
        problem = self.problem
        if problem is not None:
            kind = problem.problem_type.suffix if problem.problem_type else problem.type_uri
            return f"{self.status} {kind}"
        if self.media_type_ok is False or (self.status >= 400 and self.body and not self.problem_media_type_ok):
            return f"{self.status} labelled {self.content_type!r}"
        return str(self.status)

    def refused(self) -> str:
        """``was refused (…)`` for an answer, ``was not answered (…)`` for an exchange that failed: a timeout or a
        broken connection is never a refusal (P1-JUDGE-3), and a message must not call it one."""
        if self.status is None:
            return f"was not answered ({self.describe().removeprefix('no answer (').removesuffix(')')})"
        return f"was refused ({self.describe()})"

    def note(self, *, new_connection: bool) -> str:
        """The transcript note: stage and evidence of a failure, the connection when new, sizes that matter."""
        parts: list[str] = []
        if self.status is None:
            parts.append(self.describe())
            if self.stage is not None:
                parts.append(f"stage={self.stage.value}")
            if self.evidence is not None:
                parts.extend(f"{name}={value}" for name, value in self.evidence.items().items())
            if self.deadline_s is not None and (self.evidence is None or self.evidence.deadline_s is None):
                parts.append(f"deadline_s={self.deadline_s:g}")
        else:
            # The transcript's Entry has no content-type member: the note carries it for every answer.
            parts.append(f"content-type {self.content_type or 'none'}")
            if self.content_length is not None and self.content_length != len(self.body):
                parts.append(f"content-length {self.content_length}, {len(self.body)} bytes received")
        if self.connection is not None and (new_connection or self.status is None):
            parts.append(self.connection.describe())
        return "; ".join(parts)


@dataclass(frozen=True)
class Identity:
    """A client certificate the harness can present (or none)."""

    name: str
    cert: Path | None
    key: Path | None


class IutLink:
    """One HTTP/2 client per identity towards the IUT's base URI; records into the current transcript.

    Deadlines come from :class:`~.patience.Patience` (P1-JUDGE-5): they grow with the IUT's measured answer
    times and are moved on while the harness itself could not run. A request whose connection ended before any
    answer came (P1-JUDGE-6) is sent again on a new connection, as a conformant drafter, router or front would
    (§6.9 "a drafter retries a proposal whose verdict it did not receive"; P1-MSG-5; PUT and GET by HTTP), and
    the answer to the resend is what the case judges; the transcript keeps both exchanges.
    """

    def __init__(self, base_uri: str, ca: Path, identities: dict[str, Identity],
                 transcript: Callable[[], CaseTranscript | None], *,
                 request_timeout_s: float = REQUEST_TIMEOUT_S, output_timeout_s: float = OUTPUT_TIMEOUT_S,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, patience: Patience | None = None,
                 http: HttpVersions = DEFAULT_HTTP) -> None:
        self.base_uri = base_uri
        self.http = http
        """What the IUT serves (:mod:`~sdcp_conformance.transport.listeners`): the link speaks HTTP/3 where it
        serves nothing else."""
        self._ca = ca
        self._identities = identities
        self._clients: dict[tuple[str, HttpVersions], H2Client] = {}
        """Each party's client, by the HTTP version it speaks (a case may reach one listener of an IUT serving
        both, ``send(…, http="3")``)."""
        self._in_flight: dict[H2Client, int] = {}
        """Requests under way per client (a dropped client is closed when its last one ends)."""
        self._draining: set[H2Client] = set()
        self._transcript = transcript
        self.patience = patience or Patience(request_timeout_s, output_timeout_s)
        self.answered = 0
        """Requests the IUT answered (any status) on this link: whether it serves others while one is lost."""
        self.max_response_bytes = max_response_bytes
        self._timeouts = Timeouts(connect=request_timeout_s, read=output_timeout_s, write=request_timeout_s,
                                  total=max(request_timeout_s, output_timeout_s))

    @property
    def request_timeout_s(self) -> float:
        return self.patience.request_timeout_s

    @property
    def output_timeout_s(self) -> float:
        return self.patience.output_timeout_s

    def identity_names(self) -> list[str]:
        return sorted(self._identities)

    def deadline_for(self, method: str, path: str) -> float:
        """The request's deadline by resource (P1-OUT-1: only the output long poll may take its 30 s), as
        :class:`~.patience.Patience` scales it.

        D-IUT-2: the deadline covers the whole exchange — connecting included — so a verifier that stalls its
        handshake is reported within its deadline like one that stalls its answer."""
        if is_output_poll(method, path):
            return self.patience.poll_deadline()
        return self.patience.request_deadline()

    def _client(self, party: str, http: HttpVersions | None = None) -> H2Client:
        key = (party, http or self.http)
        client = self._clients.get(key)
        if client is None:
            identity = self._identities[party]
            client = self._clients[key] = client_for(
                key[1], self.base_uri, identity.cert, identity.key, self._ca, timeouts=self._timeouts,
                max_attempts=1, max_response_bytes=self.max_response_bytes)
        return client

    async def reset(self, party: str) -> None:
        """Drop a party's connection, so the next call makes a fresh one.

        Requests still under way on it finish there: it is closed when the last of them ends. Closing it at once
        cut the other lanes of a statistical case off their answers whenever one request timed out, and they were
        reported as a connection the IUT had closed (found with a verifier taking 3 s a round)."""
        for key in [key for key in self._clients if key[0] == party]:
            client = self._clients.pop(key)
            if self._in_flight.get(client):
                self._draining.add(client)
            else:
                await client.aclose()

    async def _ended(self, client: H2Client) -> None:
        left = self._in_flight[client] = self._in_flight.get(client, 1) - 1
        if left <= 0:
            del self._in_flight[client]
            if client in self._draining:
                self._draining.discard(client)
                await client.aclose()

    async def send(self, party: str, method: str, path: str, body: bytes | Message | dict[str, Any] | None = None,
                   *, content_type: str = SDCP_MEDIA_TYPE, held_s: float = 0.0,
                   http: HttpVersions | None = None) -> Answer:
        """One exchange with the IUT. ``held_s``: how long the harness itself may keep the IUT from answering
        (a case holding the IUT's commit-log append while this request is in flight), added to the deadline so
        that the IUT is given its whole deadline of its own. ``http``: "3" to reach the HTTP/3 listener of an IUT
        serving both (by default the link speaks what the target says, :mod:`~sdcp_conformance.transport.listeners`).

        A lost answer (:attr:`Answer.lost`) is asked for again on a new connection, up to
        :data:`MAX_LOST_RESENDS` times (P1-JUDGE-6); the transcript notes it for the case's INFORMATIONAL
        transport finding."""
        raw = _raw(body)
        # The harness's own message must match sdcp.cddl before it leaves, unless the case sends it on purpose as
        # it is (raw bytes, a deliberate() map, another media type): harness/self_check.py.
        refuse_request(self._transcript(), party, method, path, body, raw, content_type)
        headers = {"content-type": content_type, "accept": SDCP_MEDIA_TYPE} if raw is not None else None
        loop = asyncio.get_running_loop()
        started = loop.time()
        answered = self.answered
        answer = await self._exchange(party, method, path, raw, headers, held_s, "", http)
        lost: list[Answer] = []
        idle = 0
        while answer.lost:
            idle = 0 if self.answered > answered else idle + 1
            answered = self.answered
            if idle > MAX_LOST_RESENDS or loop.time() - started > self.patience.wait(LOST_RESEND_BUDGET_S):
                break
            lost.append(answer)
            answer = await self._exchange(party, method, path, raw, headers, held_s,
                                          f"sent again on a new connection (P1-JUDGE-6, resend {len(lost)}): "
                                          f"its connection ended before an answer ({answer.failure_detail})", http)
        transcript = self._transcript()
        if transcript is not None:
            transcript.features_used |= message_features(method, path, body)
            if lost:
                streams = ", ".join(str(one.evidence.stream_id) for one in lost
                                    if one.evidence is not None and one.evidence.stream_id is not None)
                refused = answer.status is not None and 400 <= answer.status < 500
                transcript.lost_answer(f"{method} {path}: {lost[0].failure_detail}"
                                       + (f" (stream {streams})" if streams else "")
                                       + f"; sent again {len(lost)} time(s), then {answer.describe()}",
                                       refused=refused)
            if answer.timed_out:
                transcript.missed_deadline(DeadlineMiss(answer.failure_detail,
                                                        answer.stage.label if answer.stage else "timeout",
                                                        answer.deadline_s))
            elif answer.status in BUSY_STATUSES:
                shown = answer.describe()
                transcript.missed_deadline(DeadlineMiss(shown if " " in shown else f"got {shown}",
                                                        f"the IUT answered {answer.status}: busy, try later"))
        return answer

    async def _exchange(self, party: str, method: str, path: str, raw: bytes | None,
                        headers: dict[str, str] | None, held_s: float, why: str,
                        http: HttpVersions | None = None) -> Answer:
        """One request on the party's client, recorded; a failure leaves the party a fresh client."""
        deadline = self.deadline_for(method, path) + held_s
        client = self._client(party, http)
        opened = client.connections_opened
        self._in_flight[client] = self._in_flight.get(client, 0) + 1
        self.patience.stall.start()
        loop = asyncio.get_running_loop()
        started = loop.time()
        failed = False
        try:
            response = await client.request(method, path, raw, headers=headers, retry=False, timeout=deadline,
                                            extension=self.patience.extension)
        except TransportFailure as failure:
            answer = Answer(None, b"", None, failure.kind, failure.detail, stage=failure.stage,
                            evidence=failure.evidence, connection=failure.connection, deadline_s=deadline)
            failed = True
        except asyncio.CancelledError:
            # The case ended (its own deadline) with this request in flight: the evidence must still show it.
            self._record(party, method, path, raw, None, note=f"in flight when the case was cancelled "
                         f"(the request's own deadline was {deadline:g} s)")
            raise
        else:
            answer = Answer(response.status, response.body, response.content_type, connection=response.connection,
                            headers=response.headers, deadline_s=deadline)
            self.answered += 1
            if not held_s and not is_output_poll(method, path):
                self.patience.observe(loop.time() - started)
        finally:
            await self._ended(client)
        if failed and self._clients.get((party, http or self.http)) is client:
            await self.reset(party)
        new_connection = client.connections_opened != opened
        note = answer.note(new_connection=new_connection)
        self._record(party, method, path, raw, answer, note=f"{why}; {note}" if why else note)
        return answer

    def _record(self, party: str, method: str, path: str, raw: bytes | None, answer: Answer | None, *,
                note: str) -> None:
        transcript = self._transcript()
        if transcript is None:
            return
        if answer is None:
            transcript.record("to-iut", party, method, path, raw or b"", None, b"", note=note)
            return
        transcript.record("to-iut", party, method, path, raw or b"", answer.status, answer.body,
                          content_type=answer.content_type, note=note)

    async def aclose(self) -> None:
        await self.patience.stall.stop()
        clients = [*self._clients.values(), *self._draining]
        self._clients.clear()
        self._draining.clear()
        self._in_flight.clear()
        for client in clients:
            await client.aclose()


def _raw(body: bytes | Message | dict[str, Any] | None) -> bytes | None:
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, Message):
        return body.to_cbor()
    return encode(body)


__all__ = [
    "BUSY_STATUSES",
    "DEFAULT_TIMEOUTS",
    "LOST_RESEND_BUDGET_S",
    "LOST_STAGES",
    "MAX_LOST_RESENDS",
    "OUTPUT_TIMEOUT_S",
    "PROBLEM_MEDIA_TYPES",
    "REQUEST_TIMEOUT_S",
    "Answer",
    "Identity",
    "IutLink",
    "is_output_poll",
]
