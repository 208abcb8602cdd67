"""API-level fuzzing with schemathesis: every verifier resource of Table 1, over HTTP/2 with client certificates.

schemathesis generates each request from the OpenAPI document of
:mod:`sdcp_conformance.fuzz.openapi` (positive and negative data); the CBOR
serializer registered here turns the document's hex strings back into bytes
and encodes with :func:`sdcp_conformance.protocol.codec.encode`. Its command
line speaks HTTP/1.1 only, so each case is sent through an ``httpx`` HTTP/2
client presenting the harness identity the resource expects (the router for
router-only resources, a drafter for proposals) and judged with schemathesis'
checks on the ``httpx`` response.

Random session ids only reach the front door (404, 403). So most cases are
*anchored*: their identifying members (session, epoch, contract, drafter,
base, digest, round, path id) are replaced by those of a session the harness
has just opened and assigned, so the generated rest of the message (tokens,
status, sampling, from_round, …) reaches the session machine; some of them are
also brought *within limits* (see :data:`ANCHORING`) so the success paths are
fuzzed too. ``GET output`` is anchored to a canary session with committed
output, so it never long-polls. The anchoring follows each operation's cases
in turn (:data:`ANCHORING`), so a seed replays the same requests.

Judgement (each failure keeps its level): a 5xx other than 503 is ``MUST``
(§5.1 errors are problems of Table 2); a success body that does not match the
CDDL is ``MUST`` (§5.2); an undocumented status or a problem body that does
not match P1-ERR-1 is ``PROFILE`` ("clients handle unlisted status codes by
class", §5.1). After the run (and every :data:`CANARY_EVERY` cases) a canary
session must still be served; a full greedy round ends the run.
"""

from __future__ import annotations

import collections
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from sdcp_conformance.fuzz import openapi
from sdcp_conformance.fuzz.database import seeded
from sdcp_conformance.fuzz.loop import LoopThread, StepTimeout
from sdcp_conformance.fuzz.rules.verifier_steps import FUZZ_CASE
from sdcp_conformance.harness.case import CaseStopped
from sdcp_conformance.harness.contexts.verifier import DEFAULT_PROMPT, TrackedSession, VerifierContext
from sdcp_conformance.harness.specs.verifier import VerifierEnvironment
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
from sdcp_conformance.transport.tls import client_ssl_context

REQUEST_TIMEOUT = httpx.Timeout(connect=5.0, read=30.0, write=10.0, pool=5.0)
"""Longer than the embedded IUT's 2 s output wait; a hung IUT shows as a failed request, never a hang."""
CANARY_EVERY = 25
ANCHOR_TIMEOUT_S = 30.0
RETRYABLE_SERVER_ERROR = 503
"""Documented (D-VER-8, P1-DRF-5: retried with the identical body), so not a server-error failure."""

NOT_ANCHORED, ANCHORED, WITHIN_LIMITS = 0, 1, 2
ANCHORING = (WITHIN_LIMITS, ANCHORED, NOT_ANCHORED)
"""0: as generated; 1: anchored; 2: anchored within the limits (token ids folded into the vocabulary, at most
m_max of them, a plain session-open, the committed state in an assignment, a future from_round). Each operation's
cases take the three in turn, so every operation reaches its success path whatever share of the cases Hypothesis
gives it (a draw with the case left an operation with a few cases, all of them refused at the door, depending on
the Hypothesis release)."""
M_MAX = 8
"""The anchored sessions' contract m_max (and m_init): longer token lists are cut to it when within limits."""

MUST = "MUST"
PROFILE = "PROFILE"

_CHECKS = ("not_a_server_error", "status_code_conformance", "response_schema_conformance")


@dataclass(frozen=True)
class ApiFailure:
    """One distinct failure: which check, on which operation, with the request that showed it."""

    check: str
    operation: str
    status: int | None
    level: str
    message: str
    request: str

    @property
    def strict(self) -> bool:
        return self.level == MUST

    def key(self) -> tuple[str, str, int | None]:
        return self.check, self.operation, self.status


@dataclass
class ApiStats:
    examples: int = 0
    anchored: int = 0
    canary_checks: int = 0
    by_status: collections.Counter[int] = field(default_factory=collections.Counter)
    by_operation: collections.Counter[str] = field(default_factory=collections.Counter)
    outcomes: collections.Counter[tuple[str, bool, int]] = field(default_factory=collections.Counter)
    """(operation, anchored, status) → count: which answers the fuzzing actually reached."""
    failures: list[ApiFailure] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None

    @property
    def elapsed(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    @property
    def rate(self) -> float:
        return self.examples / max(self.elapsed, 1e-9)

    @property
    def failure(self) -> ApiFailure | None:
        """The first strict failure (the CLI's display and exit status follow it)."""
        return next((failure for failure in self.failures if failure.strict), None)

    @property
    def deviations(self) -> list[ApiFailure]:
        return [failure for failure in self.failures if not failure.strict]


# ---------------------------------------------------------------------- schemathesis glue


def _register_codecs() -> None:
    """The CBOR serializer and deserializer (schemathesis keeps a global registry; registering twice is harmless)."""
    import schemathesis

    @schemathesis.serializer(SDCP_MEDIA_TYPE)
    def _serialize(context: schemathesis.SerializationContext, value: Any) -> bytes:
        operation = context.case.operation
        document = operation.schema.raw_schema
        component = openapi.request_component(operation.method, operation.path)
        node = {"$ref": f"#/components/schemas/{component}"} if component else {}
        return encode(openapi.to_wire(value, node, document))

    @schemathesis.deserializer(SDCP_MEDIA_TYPE)
    def _deserialize(context: schemathesis.DeserializationContext, response: schemathesis.Response) -> Any:
        return openapi.to_document(decode(response.content))


def load_schema(base_uri: str) -> Any:
    """The schemathesis schema of the IUT's resources (an ``OpenApiSchema``)."""
    import schemathesis

    _register_codecs()
    return schemathesis.openapi.from_dict(openapi.build_document(base_uri))


def case_strategy(schema: Any) -> st.SearchStrategy[Any]:
    """Positive and negative cases of every operation."""
    from schemathesis import GenerationMode

    strategies = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategies.append(operation.as_strategy(generation_mode=mode))
    return st.one_of(strategies)


def _check_functions() -> dict[str, Callable[..., Any]]:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

    return {"not_a_server_error": not_a_server_error, "status_code_conformance": status_code_conformance,
            "response_schema_conformance": response_schema_conformance}


# ---------------------------------------------------------------------- the runner


class ApiFuzzer:
    """Sends schemathesis cases to the IUT and judges the answers; one instance per environment."""

    def __init__(self, loop: LoopThread, progress: Callable[[ApiStats], None] | None = None) -> None:
        self.loop = loop
        self.env: VerifierEnvironment = loop.env
        self.ctx = VerifierContext(self.env, FUZZ_CASE, 0, f"fuzz-api-{secrets.token_hex(4)}")
        self.schema = load_schema(self.env.config.base_uri)
        self.stats = ApiStats()
        self._progress = progress
        self._clients: dict[str, httpx.Client] = {}
        self._checks = _check_functions()
        self.canary: TrackedSession | None = None

    # ------------------------------------------------------------------ transport

    def _client(self, party: str) -> httpx.Client:
        if party not in self._clients:
            pki = self.env.pki
            context = client_ssl_context(pki.cert(party), pki.key(party), self.env.config.ca)
            self._clients[party] = httpx.Client(http1=False, http2=True, verify=context, timeout=REQUEST_TIMEOUT)
        return self._clients[party]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def send(self, case: Any) -> httpx.Response | str:
        """The case over HTTP/2 as the resource's identity; a transport failure comes back as its description."""
        resource = openapi.resource_of(case.operation.method, case.operation.path)
        kwargs = case.as_transport_kwargs(base_url=self.env.config.base_uri.rstrip("/"))
        try:
            return self._client(resource.party).request(
                kwargs["method"], kwargs["url"], content=kwargs.get("data"), headers=kwargs.get("headers"),
                params=kwargs.get("params"))
        except httpx.HTTPError as exc:
            self._clients.pop(resource.party).close()  # a fresh connection for the next case
            return f"{type(exc).__name__}: {exc}"

    # ------------------------------------------------------------------ sessions

    def _run(self, coroutine: Any) -> Any:
        return self.loop.run(coroutine, ANCHOR_TIMEOUT_S)

    def _fresh_session(self, drafter: str = "drafter-1") -> TrackedSession | None:
        """An opened and assigned session, or None (recorded as a failure) when the IUT refuses a plain one."""
        session = self.ctx.track("bigram", self.ctx.contract("bigram", max_new=10**6, m_max=M_MAX))
        try:
            opened = self._run(self.ctx.open(session))
            assigned = self._run(self.ctx.assign(session, drafter, m_init=M_MAX)) if opened.ok else opened
        except StepTimeout as exc:
            self._record("session", "POST /sessions", None, MUST, f"opening a plain session hung: {exc}", "setup")
            return None
        if not assigned.ok:
            self._record("session", "POST /sessions", assigned.status, MUST,
                         f"the IUT refused a plain session: {assigned.describe()}", "setup")
            return None
        return session

    def _canary_round(self) -> None:
        """A full greedy round on the canary (another drafter's session): the IUT still works."""
        if self.canary is None:
            self.canary = self._fresh_session("drafter-2")
        canary = self.canary
        if canary is None:
            return
        self.stats.canary_checks += 1
        expected = self.ctx.greedy(canary, 2)
        try:
            answer = self._run(self.ctx.propose(canary, expected[:1], drafter="drafter-2"))
        except (CaseStopped, StepTimeout) as exc:  # a wrong verdict (digest, round…) or a hang
            self._record("canary", "POST /proposals", None, MUST, f"the canary round failed: {exc}", "canary round")
            return
        if not answer.ok or list(canary.verdicts[canary.round].emitted) != expected:
            self._record("canary", "POST /proposals", answer.status, MUST,
                         f"the canary session stopped working: {answer.describe()}", "canary round")

    def _canary_read(self) -> None:
        canary = self.canary
        if canary is None:
            return
        self.stats.canary_checks += 1
        try:
            answer = self._run(self.ctx.output(canary, 0, party="drafter-2"))
        except StepTimeout as exc:
            self._record("canary", "GET /sessions/{id}/output", None, MUST, f"reading it hung: {exc}", "canary read")
            return
        if not answer.ok:
            self._record("canary", "GET /sessions/{id}/output", answer.status, MUST,
                         f"the canary session's output is no longer served: {answer.describe()}", "canary read")

    # ------------------------------------------------------------------ anchoring

    def anchor(self, case: Any, *, within_limits: bool = False) -> None:
        """Replace the identifying members by a live session's (see the module docstring)."""
        path = case.operation.path
        if path == "/sessions/{id}/output":
            if self.canary is None:
                return
            case.path_parameters = {"id": self.canary.path_id}
            query = case.query if isinstance(case.query, dict) else {}
            start = query.get("from")
            limit = max(len(self.canary.output) - 1, 0)
            case.query = {**query, "from": start % (limit + 1) if isinstance(start, int) and start >= 0 else 0}
            return
        if not isinstance(case.body, dict):
            return
        if path == "/sessions":
            if within_limits:
                # A plain session-open that opens: a fresh session, its log in the harness's cache, the generated
                # prompt folded into the vocabulary; generated members the harness cannot make valid (a failover
                # resume, cache-refs naming nothing) are left to the other anchorings.
                prompt = self._in_vocabulary(case.body.get("prompt"), 16) or list(DEFAULT_PROMPT)
                case.body = openapi.to_document(self.ctx.opening(self.ctx.track("bigram", prompt=prompt)))
            else:
                case.body["contract"] = openapi.to_document(self.ctx.contract("bigram"))
            return
        session = self._fresh_session()
        if session is None:
            return
        case.body.update(openapi.to_document(self._identity(path, session)))
        if "{id}" in path:
            case.path_parameters = {"id": session.path_id}
        if within_limits:
            self._within_limits(case.body, path, session)

    def _within_limits(self, body: dict[str, Any], path: str, session: TrackedSession) -> None:
        """Values the anchored session can accept, so the success paths are fuzzed too."""
        if path == "/proposals":
            # In the vocabulary, so the verdict path is reached; ids >= V (the refusal) come with the plain
            # anchoring, whose generated ids are mostly out of range. The status member a drafter would send: a
            # generated one is mostly out of its ranges and refused before the proposal is looked at.
            body["tokens"] = self._in_vocabulary(body.get("tokens"), M_MAX) or [0]
            body["status"] = openapi.to_document(self.ctx.proposal(session, [0])["status"])
            # Generated cache-refs name no object the harness's cache holds: a rule-1 session needs none, and
            # a verifier may refuse a reference it cannot parse, so the success path drops them.
            body.pop("q_rows", None)
            body.pop("draft_kv", None)
        elif path == "/sessions/{id}/drafter":  # the committed state as it is; drafter, m_init, sampling generated
            state = self.ctx.assignment(session)
            body.update(openapi.to_document({key: state[key] for key in ("prompt", "round", "committed", "digest")}))
        elif path == "/sessions/{id}/policy":  # P1-POL-1: from_round after the current round (0)
            from_round = body.get("from_round")
            body["from_round"] = from_round if isinstance(from_round, int) and from_round >= 1 else 1

    def _in_vocabulary(self, tokens: Any, limit: int) -> list[int] | None:
        """Generated token ids folded into the bigram model's vocabulary, at most ``limit`` of them."""
        if not isinstance(tokens, list) or not all(isinstance(token, int) for token in tokens):
            return None
        return [token % self.ctx.mock("bigram").vocab_size for token in tokens[:limit]]

    def _identity(self, path: str, session: TrackedSession) -> dict[str, Any]:
        if path == "/proposals":
            proposal = self.ctx.proposal(session, [0])
            return {key: proposal[key] for key in ("session", "epoch", "round", "drafter", "base", "base_digest")}
        if path == "/sessions/{id}/drafter":
            return {"session": session.id, "epoch": session.epoch, "contract": session.contract}
        return {"session": session.id}

    # ------------------------------------------------------------------ judging

    def check(self, case: Any, anchoring: int | None = None) -> None:
        """Send ``case`` (anchored as ``anchoring`` says; None: the operation's next turn) and judge the answer."""
        if anchoring is None:
            turn = self.stats.by_operation[f"{case.operation.method.upper()} {case.operation.path}"]
            anchoring = ANCHORING[turn % len(ANCHORING)]
        if anchoring != NOT_ANCHORED:
            self.anchor(case, within_limits=anchoring == WITHIN_LIMITS)
            self.stats.anchored += 1
        operation = f"{case.operation.method.upper()} {case.operation.path}"
        response = self.send(case)
        self.stats.examples += 1
        self.stats.by_operation[operation] += 1
        if isinstance(response, str):
            self._record("transport", operation, None, MUST, f"no HTTP/2 answer: {response}", _describe(case))
        else:
            self.stats.by_status[response.status_code] += 1
            self.stats.outcomes[(operation, anchoring != NOT_ANCHORED, response.status_code)] += 1
            self._judge(case, operation, response)
        if self.stats.examples % CANARY_EVERY == 0:
            self._canary_read()
        if self._progress is not None:
            self._progress(self.stats)

    def _judge(self, case: Any, operation: str, response: httpx.Response) -> None:
        for name in _CHECKS:
            if name == "not_a_server_error" and response.status_code == RETRYABLE_SERVER_ERROR:
                continue
            message = _run_check(case, response, self._checks[name])
            if message is not None:
                level = _level(name, response.status_code)
                self._record(name, operation, response.status_code, level, message, _describe(case))

    def _record(self, check: str, operation: str, status: int | None, level: str, message: str,
                request: str) -> None:
        failure = ApiFailure(check, operation, status, level, message, request)
        if all(known.key() != failure.key() for known in self.stats.failures):
            self.stats.failures.append(failure)

    # ------------------------------------------------------------------ a run

    def run(self, *, examples: int, seed: int) -> ApiStats:
        if self.canary is None:
            self._canary_round()
        strategy = case_strategy(self.schema)

        @settings(max_examples=examples, database=None, deadline=None, derandomize=False,
                  suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate))
        @hypothesis.given(case=strategy)
        def fuzz(case: Any) -> None:
            self.check(case)

        seeded(fuzz, seed, None)()  # failures are collected, not raised: a fuzz run reports every distinct one
        self._canary_round()
        self.stats.finished = time.monotonic()
        return self.stats


def _level(check: str, status: int) -> str:
    if check == "not_a_server_error":
        return MUST
    if check == "response_schema_conformance" and 200 <= status < 300:
        return MUST  # §5.2: a success body is a message of the CDDL
    return PROFILE  # P1-MSG-4 / P1-ERR-1; §5.1 "clients handle unlisted status codes by class"


def _run_check(case: Any, response: httpx.Response, check: Callable[..., Any]) -> str | None:
    from schemathesis.core.failures import FailureGroup

    try:
        case.validate_response(response, checks=[check])
    except FailureGroup as group:
        return "; ".join(_failure_text(failure) for failure in group.exceptions)
    return None


def _failure_text(failure: Any) -> str:
    title = getattr(failure, "title", type(failure).__name__)
    message = getattr(failure, "message", "")
    return f"{title}: {message}".strip().rstrip(":")


def _describe(case: Any) -> str:
    """The request as sent, body as hex CBOR, so it can be replayed by hand."""
    resource = openapi.resource_of(case.operation.method, case.operation.path)
    target = case.formatted_path + (f"?{_query(case.query)}" if case.query else "")
    text = f"{case.operation.method.upper()} {target} as {resource.party}"
    plain = isinstance(case.body, dict | list | str | int | float | bool) or case.body is None
    if plain and resource.request is not None:
        node = {"$ref": f"#/components/schemas/{resource.request}"}
        wire = openapi.to_wire(case.body, node, case.operation.schema.raw_schema)
        text += f"; body (CBOR hex) {encode(wire).hex()}"
    return text


def _query(query: dict[str, Any]) -> str:
    return "&".join(f"{key}={value}" for key, value in query.items())


# ---------------------------------------------------------------------- a campaign


def run_api_campaign(*, target: Any = None, mutant: str | None = None, examples: int | None = None,
                     budget_s: float | None = None, seed: int = 0,
                     progress: Callable[[ApiStats], None] | None = None) -> ApiStats:
    """Start the environment (embedded reference, a mutant of it, or a target) and fuzz its API."""
    from sdcp_conformance.fuzz.identity import one_iut
    from sdcp_conformance.fuzz.rules.verifier import VERIFIER

    one_iut(target, mutant)
    VERIFIER.quiet()  # a crashing IUT is judged from its answers, not from its log lines
    with LoopThread() as loop:
        VERIFIER.start(loop, target, mutant)
        fuzzer = ApiFuzzer(loop, progress)
        try:
            if budget_s is None:
                return fuzzer.run(examples=examples or 200, seed=seed)
            round_ = 0
            while fuzzer.stats.elapsed < budget_s:
                fuzzer.run(examples=100, seed=seed + round_)
                round_ += 1
            return fuzzer.stats
        finally:
            fuzzer.close()


__all__ = [
    "CANARY_EVERY",
    "MUST",
    "PROFILE",
    "ApiFailure",
    "ApiFuzzer",
    "ApiStats",
    "case_strategy",
    "load_schema",
    "run_api_campaign",
    "run_command",
]


# ---------------------------------------------------------------------- the command line (``fuzz --api``)


def run_command(console: Any, *, target: Any, mutant: str | None, examples: int | None, budget_s: float | None,
                seed: int) -> int:
    """Run with a live display like the other fuzz modes; the exit status is 1 on a strict failure."""
    from rich.live import Live

    with Live(_table(None), console=console, refresh_per_second=4, transient=False) as live:
        stats = run_api_campaign(target=target, mutant=mutant, examples=examples, budget_s=budget_s, seed=seed,
                                 progress=lambda current: live.update(_table(current)))
    _summary(console, stats)
    return 0 if stats.failure is None else 1


def _table(stats: ApiStats | None) -> Any:
    from rich.table import Table

    table = Table(title="sdcp-conformance fuzz --api", show_header=False)
    if stats is None:
        table.add_row("starting", "the environment")
        return table
    table.add_row("requests", f"{stats.examples} ({stats.rate:.0f}/s), {stats.anchored} anchored")
    table.add_row("canary checks", str(stats.canary_checks))
    table.add_row("profile deviations", str(len(stats.deviations)))
    table.add_row("elapsed", f"{stats.elapsed:.0f} s")
    table.add_row("failure", "none yet" if stats.failure is None else stats.failure.message[:100])
    return table


def _summary(console: Any, stats: ApiStats) -> None:
    console.print(f"{stats.examples} requests ({stats.anchored} anchored) in {stats.elapsed:.0f} s "
                  f"({stats.rate:.0f}/s), {stats.canary_checks} canary checks, "
                  f"status counts {dict(sorted(stats.by_status.items()))}", markup=False)
    for failure in stats.failures:
        colour = "red" if failure.strict else "yellow"
        console.print(f"[{colour}]{failure.level}[/{colour}] {failure.check} on {failure.operation} "
                      f"({failure.status}):")
        console.print(f"  {failure.message}\n  request: {failure.request}", markup=False)
    if stats.failure is None:
        console.print("[green]no failure found[/green]")
