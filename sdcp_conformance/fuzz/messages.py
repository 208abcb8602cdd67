"""Message fuzzing: generated CBOR for every request type, each answer judged by class, a canary after each.

A :class:`Recipe` (resource, mutation, member, variant) is what Hypothesis
generates and shrinks; it is turned into bytes against live sessions when it
runs. The expected class follows the draft and P1-MSG-2/3: malformed bytes,
wrong types, out-of-range values and missing members are 4xx (400
``sdcp-bad-message``; 422 ``sdcp-bad-contract`` inside the contract), unknown
keys outside the contract and non-deterministic encodings are not refused for
that reason, and nothing is ever a 5xx or a dropped connection. After every
message a canary session (another drafter's) must still complete a round with
exactly the greedy tokens.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase

from sdcp_conformance.fuzz import hostile
from sdcp_conformance.fuzz.database import seeded
from sdcp_conformance.fuzz.judging import FuzzJudge
from sdcp_conformance.fuzz.loop import LoopThread
from sdcp_conformance.fuzz.rules.verifier_steps import FUZZ_CASE
from sdcp_conformance.fuzz.scaffold import FuzzFailure
from sdcp_conformance.fuzz.steps import Step, Violation
from sdcp_conformance.harness.case import CaseStopped
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import (
    Assignment,
    Contract,
    Message,
    Output,
    Policy,
    Proposal,
    SessionOpen,
    SessionState,
    Verdict,
)
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.suites.verifier.contract import loose_encode

RESOURCES = ("session-open", "assignment", "proposal", "policy", "output")
MUTATIONS = ("valid", "non_canonical", "unknown_key", "unknown_key_nested", "boundary", "wrong_type", "missing",
             "unknown_action", "duplicate_key", "truncated", "trailing", *hostile.RAW_MUTATIONS, "garbage",
             "bad_path")
CANARY_ROUND_EVERY = 20
"""Every message is followed by a canary output read; every 20th by a full canary round (a round costs the
IUT a scoring pass and a commit-log append, ten times a read)."""
ROTATE_AFTER = 300
"""Rounds after which the victim and canary sessions are replaced (their tracked prefix stays short)."""
BAD = ProblemType.BAD_MESSAGE
BAD_CONTRACT = ProblemType.BAD_CONTRACT
PROBLEM_ROWS = {BAD: "R-5.2-WELL-FORMED", BAD_CONTRACT: "R-6.1-VALIDATES"}
"""The requirement rows a malformed message's refusal is judged against (the judge decides the severity:
accepting it is FAILED, another 4xx than 400 sdcp-bad-message NON-STRICT, another than 422 sdcp-bad-contract
inside the contract FAILED, P1-JUDGE-1)."""
SUCCESS_MESSAGES: dict[str, type[Message]] = {"session-open": SessionState, "assignment": SessionState,
                                              "proposal": Verdict, "policy": SessionState, "output": Output}
"""What a 2xx answer's body must be, per resource (Table 1)."""


class Expect(enum.Enum):
    OK = "2xx"
    ACCEPTABLE = "not refused as malformed"
    MALFORMED = "4xx (malformed)"
    EITHER = "2xx or 4xx"


@dataclass(frozen=True)
class Recipe:
    resource: str
    mutation: str
    member: int
    variant: int

    def to_step(self) -> Step:
        return Step("message", dataclasses.asdict(self))

    @classmethod
    def from_step(cls, step: Step) -> Recipe:
        args = step.args
        return cls(str(args["resource"]), str(args["mutation"]), int(args["member"] or 0),
                   int(args["variant"] or 0))


@dataclass(frozen=True)
class Built:
    party: str
    method: str
    path: str
    body: bytes | None
    expect: Expect
    problems: frozenset[ProblemType] = frozenset()
    what: str = ""


@dataclass
class MessageStats:
    messages: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    server_errors: int = 0
    dropped: int = 0
    judge: FuzzJudge = field(default_factory=FuzzJudge)
    """NON-STRICT / INFORMATIONAL findings per row (FAILED ones end the campaign with a shrunk message)."""
    canary_rounds: int = 0
    started: float = field(default_factory=time.monotonic)
    failure: FuzzFailure | None = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        return self.messages / self.elapsed if self.elapsed > 0 else 0.0


def recipes() -> st.SearchStrategy[Recipe]:
    return st.builds(Recipe, st.sampled_from(RESOURCES), st.sampled_from(MUTATIONS), st.integers(0, 63),
                     st.integers(0, 2**16))


class MessageFuzzer:
    """Sends generated messages to the IUT from the right identities and judges each answer."""

    def __init__(self, loop: LoopThread, progress: Callable[[MessageStats], None] | None = None, *,
                 strict: bool = False) -> None:
        self.loop = loop
        self.ctx = VerifierContext(loop.env, FUZZ_CASE, 0, f"fuzz-messages-{secrets.token_hex(4)}")
        self.stats = MessageStats(judge=FuzzJudge(strict=strict))
        self._progress = progress
        self.victim: TrackedSession | None = None
        self.canary: TrackedSession | None = None

    # ------------------------------------------------------------------ sessions

    async def _fresh(self, drafter: str) -> TrackedSession:
        session = self.ctx.track("bigram", self.ctx.contract("bigram", max_new=10**6, m_max=8))
        if not (await self.ctx.open(session)).ok or not (await self.ctx.assign(session, drafter, m_init=8)).ok:
            raise Violation("the IUT refused to open a plain session for the message fuzzer")
        return session

    async def _ensure_sessions(self) -> None:
        if self.victim is None or self.victim.round >= ROTATE_AFTER:
            self.victim = await self._fresh("drafter-1")
            tokens = self.ctx.greedy(self.victim, 2)
            answer = await self.ctx.send_proposal(self.ctx.proposal(self.victim, tokens[:1]))
            self._advance(self.victim, answer)
        if self.canary is None or self.canary.round >= ROTATE_AFTER:
            self.canary = await self._fresh("drafter-2")

    def _advance(self, session: TrackedSession, answer: Answer) -> None:
        try:
            if answer.ok:
                self.ctx.apply_verdict(session, Verdict.from_cbor(answer.body))
        except CaseStopped as stopped:  # the context recorded the finding: end this example with it
            raise Violation(f"a verdict for the fuzzer's own session is wrong: {stopped.finding.message}",
                            row=stopped.finding.row) from None
        except MalformedMessage as exc:
            raise Violation(f"a verdict for the fuzzer's own session is not a verdict: {exc}") from None

    async def _canary_check(self) -> None:
        canary = self.canary
        assert canary is not None
        if self.stats.messages % CANARY_ROUND_EVERY == 0 or not canary.output:
            await self._canary_round()
            return
        start = len(canary.output) - 1
        answer = await self.ctx.output(canary, start, party="drafter-2")
        try:
            output = Output.from_cbor(answer.body) if answer.ok else None
        except Exception:
            output = None
        if output is None or list(output.tokens) != canary.output[start:] or output.epoch != canary.epoch:
            raise Violation(f"the canary session's output is no longer served after that message: "
                            f"{answer.describe()} (other sessions must be unaffected)")

    async def _canary_round(self) -> None:
        canary = self.canary
        assert canary is not None
        expected = self.ctx.greedy(canary, 2)
        answer = await self.ctx.propose(canary, expected[:1], drafter="drafter-2")
        self.stats.canary_rounds += 1
        if not answer.ok or list(canary.verdicts[canary.round].emitted) != expected:
            raise Violation(f"the canary session stopped working after that message: {answer.describe()} (other "
                            "sessions must be unaffected)")

    # ------------------------------------------------------------------ one example

    async def check(self, recipe: Recipe) -> None:
        await self._ensure_sessions()
        built = self.build(recipe)
        answer = await self.loop.env.iut.send(built.party, built.method, built.path, built.body)
        self._count(answer)
        self.judge(recipe, built, answer)
        if built.party == "drafter-1" and built.method == "POST" and self.victim is not None:
            await self._follow_victim(answer)
        await self._canary_check()

    async def _follow_victim(self, answer: Answer) -> None:
        victim = self.victim
        assert victim is not None
        if answer.ok:
            try:
                verdict = Verdict.from_cbor(answer.body)
            except Exception:
                return
            if verdict.session == victim.id and verdict.round == victim.round + 1:
                self._advance(victim, answer)

    def _count(self, answer: Answer) -> None:
        self.stats.messages += 1
        if answer.status is None:
            self.stats.dropped += 1
            return
        self.stats.by_status[answer.status] = self.stats.by_status.get(answer.status, 0) + 1
        if answer.status >= 500:
            self.stats.server_errors += 1

    def judge(self, recipe: Recipe, built: Built, answer: Answer) -> None:
        """Each answer through the one judge: FAILED findings raise, the others are kept per row."""
        what = f"{built.method} {built.path} ({recipe.resource}, {recipe.mutation}{built.what})"
        judge = self.stats.judge
        status = answer.status
        if built.expect is Expect.MALFORMED:
            judge.refusal(answer, sorted({PROBLEM_ROWS[problem] for problem in built.problems}),
                          f"{what}: a malformed message")
            return
        judge.condition(status is not None and status < 500, "R-5.1-RESOURCES",
                        f"{what}: {answer.describe()} — never a 5xx or a dropped connection")
        if built.expect is Expect.OK:
            judge.condition(answer.ok, "R-5.1-RESOURCES", f"{what}: a valid message was refused: "
                            f"{answer.describe()}")
        if built.expect is Expect.ACCEPTABLE:
            judge.condition(answer.problem_type not in (BAD, BAD_CONTRACT), "R-5.2-UNKNOWN-KEYS",
                            f"{what}: a well-formed message was refused as malformed: {answer.describe()}")
        if answer.ok and built.method in ("POST", "PUT", "GET"):
            self._judge_success_body(recipe, answer, what)

    def _judge_success_body(self, recipe: Recipe, answer: Answer, what: str) -> None:
        """A 2xx answer carries the message its resource names (Table 1), well-formed (§5.2)."""
        kind = SUCCESS_MESSAGES[recipe.resource]
        try:
            answer.message(kind)
        except MalformedMessage as exc:
            self.stats.judge.fail("R-5.1-RESOURCES", f"{what}: the 2xx answer is not a well-formed "
                                  f"{kind.__name__}: {exc}")

    # ------------------------------------------------------------------ building messages

    def build(self, recipe: Recipe) -> Built:
        victim = self.victim
        assert victim is not None
        rng = random.Random(recipe.variant)
        if recipe.resource == "output":
            return _output(victim, recipe, rng)
        party, method, path, base, kind = self._base(recipe.resource, victim)
        if recipe.mutation == "bad_path" and recipe.resource in ("assignment", "policy"):
            bad = _bad_id(rng)
            return Built(party, method, path.replace(victim.path_id, bad), encode(base), Expect.MALFORMED,
                         frozenset({BAD}), f", id {bad!r}")
        body, expect, problems, note = mutate(recipe, base, kind, rng)
        return Built(party, method, path, body, expect, problems, note)

    def _base(self, resource: str, victim: TrackedSession) -> tuple[str, str, str, dict[str, Any], type[Message]]:
        ctx = self.ctx
        if resource == "session-open":
            info = ctx.mock("bigram")
            contract = ctx.contract("bigram", drafters=[info.model_sha256], low_ratio=50, scope=bytes(16),
                                    self_load=50, self_max=4,
                                    sampling={"temperature_milli": 0, "top_p_milli": 900, "seed": 5})
            fresh = ctx.track("bigram", contract)
            return "router", "POST", "sessions", ctx.opening(fresh), SessionOpen
        if resource == "assignment":
            body = ctx.assignment(victim, "drafter-1", m_init=8)
            return "router", "PUT", f"sessions/{victim.path_id}/drafter", body, Assignment
        if resource == "policy":
            body = {"session": victim.id, "from_round": victim.round + 1, "sampling": {"temperature_milli": 0}}
            return "router", "POST", f"sessions/{victim.path_id}/policy", body, Policy
        tokens = ctx.greedy(victim, 2)[:1]
        return "drafter-1", "POST", "proposals", ctx.proposal(victim, tokens, "drafter-1"), Proposal


# ---------------------------------------------------------------------- mutations

Mutated = tuple[bytes, Expect, frozenset[ProblemType], str]


def mutate(recipe: Recipe, base: dict[str, Any], kind: type[Message], rng: random.Random) -> Mutated:
    mutation = recipe.mutation
    valid = Expect.OK if kind is SessionOpen else Expect.ACCEPTABLE
    malformed = frozenset({BAD})
    if mutation == "non_canonical":
        style = ("indefinite", "reverse", "wide")[recipe.variant % 3]
        return loose_encode(base, **{style: True}), valid, frozenset(), f", {style}"
    if mutation == "unknown_key":
        return encode({**base, f"x-{recipe.variant}": recipe.variant}), valid, frozenset(), ""
    if mutation == "unknown_key_nested":
        return _unknown_nested(base, recipe.variant, valid)
    if mutation == "boundary":
        return _boundary(base, kind, recipe.member, valid)
    if mutation in ("wrong_type", "missing"):
        return _member_fault(base, kind, recipe, rng)
    if mutation == "unknown_action" and "contract" in base:
        return _unknown_action(base, recipe.variant, valid)
    if mutation == "duplicate_key":
        key = sorted(base)[recipe.member % len(base)]
        value = base[key] if recipe.variant % 2 else _other_type(base[key], recipe.variant)
        return hostile.duplicate_key(base, key, value), Expect.MALFORMED, malformed, f", key {key!r}"
    if mutation == "truncated":
        return hostile.truncated(encode(base), recipe.variant), Expect.MALFORMED, malformed, ""
    if mutation == "trailing":
        return hostile.trailing(encode(base), recipe.variant), Expect.MALFORMED, malformed, ""
    if mutation in hostile.RAW_MUTATIONS:
        return _raw(base, mutation, recipe)
    if mutation == "garbage":
        return rng.randbytes(recipe.member), Expect.MALFORMED, malformed, ""
    return encode(base), valid, frozenset(), ""


def _paths(base: dict[str, Any], member: int) -> tuple[str, ...]:
    """A member path: a top-level member, or (odd ``member`` and a contract present) a contract member."""
    if member % 2 and isinstance(base.get("contract"), dict):
        keys = sorted(base["contract"])
        return ("contract", keys[(member // 2) % len(keys)])
    keys = sorted(base)
    return (keys[(member // 2) % len(keys)],)


def _problems_at(path: tuple[str, ...]) -> frozenset[ProblemType]:
    return frozenset({BAD_CONTRACT}) if path[0] == "contract" and len(path) > 1 else frozenset({BAD, BAD_CONTRACT}) \
        if path[0] == "contract" else frozenset({BAD})


def _member_fault(base: dict[str, Any], kind: type[Message], recipe: Recipe, rng: random.Random) -> Mutated:
    path = _paths(base, recipe.member)
    owner = Contract if len(path) > 1 else kind
    value = base[path[0]] if len(path) == 1 else base["contract"][path[1]]
    problems = _problems_at(path)
    if recipe.mutation == "missing":
        if path[-1] not in _required(owner):
            return encode(_set(base, path, REMOVE)), Expect.OK if kind is SessionOpen else Expect.ACCEPTABLE, \
                frozenset(), f", optional {'.'.join(path)} left out"
        return encode(_set(base, path, REMOVE)), Expect.MALFORMED, problems, f", no {'.'.join(path)}"
    wrong = _other_type(value, rng.randrange(1 << 16))
    return encode(_set(base, path, wrong)), Expect.MALFORMED, problems, f", {'.'.join(path)} = {wrong!r}"[:80]


def _required(kind: type[Message]) -> set[str]:
    return {f.metadata.get("wire") or f.name for f in dataclasses.fields(kind)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}


REMOVE = object()
"""The value that makes :func:`_set` leave a member out (None is CBOR null, a wrong type like any other)."""


def _set(base: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``base`` with the member at ``path`` set to ``value`` (:data:`REMOVE`: left out)."""
    copy = dict(base)
    if len(path) == 1:
        if value is REMOVE:
            copy.pop(path[0], None)
        else:
            copy[path[0]] = value
        return copy
    copy[path[0]] = _set(dict(base[path[0]]), path[1:], value)
    return copy


def _other_type(value: Any, variant: int) -> Any:
    """A value of another CBOR type (or out of the uint range) than ``value``."""
    if isinstance(value, bool):
        return (1, "true", None)[variant % 3]
    if isinstance(value, int):
        return ("7", -1 - variant % 5, b"\x07", True, 1.5, [value], None)[variant % 7]
    if isinstance(value, bytes):
        return (len(value), value.hex(), [1], None)[variant % 4]
    if isinstance(value, str):
        return (value.encode(), 3, [value], False)[variant % 4]
    if isinstance(value, (list, tuple)):
        return ({"a": 1}, 5, "list", [-1], [[1]], ["x"])[variant % 6]
    if isinstance(value, dict):
        return ([1], "map", 0)[variant % 3]
    return {"unexpected": 1}


BOUNDARIES: dict[str, tuple[tuple[tuple[str, ...], Any, bool | None], ...]] = {
    # (member path, value, valid?) — None: the draft leaves it open (a token >= V is rejected by rule 1 or
    # refused as a bad proposal, D-VER-1), so only the class of the answer is judged.
    "session-open": (
        (("contract", "m_max"), 64, True), (("contract", "m_max"), 65, False),
        (("contract", "low_ratio"), 100, True), (("contract", "low_ratio"), 101, False),
        (("contract", "scope"), bytes(16), True), (("contract", "scope"), bytes(15), False),
        (("contract", "scope"), bytes(17), False), (("contract", "target"), bytes(31), False),
        (("contract", "target"), bytes(33), False), (("contract", "tokenizer"), bytes(31), False),
        (("contract", "self_load"), 100, True), (("contract", "self_load"), 101, False),
        (("contract", "low_rounds"), 0, False), (("contract", "drafters"), [], False),
        (("contract", "fallback"), [], False), (("session",), bytes(15), False), (("session",), bytes(17), False),
        (("epoch",), 2**64 - 1, True), (("prompt",), [], False),
    ),
    "assignment": (
        (("digest",), bytes(31), False), (("digest",), bytes(33), False), (("session",), bytes(17), False),
        (("m_init",), 0, False), (("m_init",), 64, True), (("contract", "m_max"), 65, False),
    ),
    "proposal": (
        (("base_digest",), bytes(31), False), (("base_digest",), bytes(33), False),
        (("session",), bytes(15), False), (("tokens",), [], False), (("status", "load"), 101, False),
        (("status", "load"), 100, True), (("status", "role"), 3, False), (("status", "accept_milli"), 1001, False),
        (("status", "accept_milli"), 1000, True), (("round",), 2**32, True), (("tokens",), [128], None),
        (("tokens",), [2**64 - 1], None),
    ),
    "policy": (
        (("sampling", "top_p_milli"), 1001, False), (("sampling", "top_p_milli"), 1000, True),
        (("session",), bytes(17), False), (("from_round",), 2**64 - 1, True),
    ),
}


def _boundary(base: dict[str, Any], kind: type[Message], member: int, valid: Expect) -> Mutated:
    resource = {SessionOpen: "session-open", Assignment: "assignment", Proposal: "proposal", Policy: "policy"}[kind]
    table = BOUNDARIES[resource]
    path, value, ok = table[member % len(table)]
    body = encode(_set(base, path, value))
    note = f", {'.'.join(path)} = {value!r}"[:80]
    if ok is None:
        return body, Expect.EITHER, frozenset(), note
    if ok:
        return body, valid, frozenset(), note
    problems = frozenset({BAD_CONTRACT}) if path[0] == "contract" else frozenset({BAD})
    if resource == "session-open" and path == ("prompt",):
        problems = frozenset({BAD})  # P1-SES-1: "An empty prompt is 400 sdcp-bad-message"
    if resource == "assignment" and path[0] == "contract":
        problems = frozenset({BAD_CONTRACT, BAD})
    return body, Expect.MALFORMED, problems, note


def _unknown_nested(base: dict[str, Any], variant: int, valid: Expect) -> Mutated:
    key = f"x-{variant}"
    if "contract" in base:
        # §4.1: "A contract that contains a key not defined by this document MUST be rejected".
        return encode(_set(base, ("contract", key), 1)), Expect.MALFORMED, frozenset({BAD_CONTRACT}), ", in contract"
    nested = "status" if "status" in base else "sampling"
    return encode(_set(base, (nested, key), 1)), valid, frozenset(), f", in {nested}"


def _unknown_action(base: dict[str, Any], variant: int, valid: Expect) -> Mutated:
    action = (0, 4, 6, 7, 23, 24, 255, 2**32, 2**64 - 1)[variant % 9]
    body = encode(_set(base, ("contract", "fallback"), [1, action]))
    if action in (0, 4):
        # §6.5.2: "The fallback list MUST contain only the actions reduce, switch, self_decode, and fail".
        return body, Expect.MALFORMED, frozenset({BAD_CONTRACT}), f", fallback action {action}"
    # §5.2 has an unknown action read as "fail", which a ladder may hold; the CDDL's ladder has no such value.
    return body, Expect.EITHER, frozenset(), f", unknown fallback action {action}"


def _raw(base: dict[str, Any], mutation: str, recipe: Recipe) -> Mutated:
    path = _paths(base, recipe.member)
    original = base[path[0]] if len(path) == 1 else base["contract"][path[1]]
    raw = hostile.raw_member(mutation, recipe.variant, original)
    problems = frozenset({BAD, BAD_CONTRACT}) if path[0] == "contract" else frozenset({BAD})
    expect = Expect.MALFORMED
    if mutation == "tag" and raw.startswith(b"\xd9\xd9\xf7"):
        expect = Expect.EITHER  # RFC 8949 §3.4.6: the self-described CBOR tag may be stripped
    return hostile.encode_patched(base, path, raw), expect, problems, f", {'.'.join(path)}"


def _bad_id(rng: random.Random) -> str:
    return ("A" * 21, "A" * 23, "AAAAAAAAAAAAAAAAAAAA+A", "AAAAAAAAAAAAAAAAAAAAA=", "%00", "")[rng.randrange(6)] or "x"


def _output(victim: TrackedSession, recipe: Recipe, rng: random.Random) -> Built:
    committed = len(victim.output)
    if recipe.mutation == "bad_path":
        path = f"sessions/{_bad_id(rng)}/output?from=0"
        return Built("drafter-2", "GET", path, None, Expect.MALFORMED, frozenset({BAD}), ", bad id")
    if recipe.mutation in ("valid", "non_canonical", "unknown_key"):
        start = recipe.variant % max(1, committed)
        return Built("drafter-2", "GET", f"sessions/{victim.path_id}/output?from={start}", None, Expect.OK)
    query = ("from=-1", "from=abc", "from=", "from=1.5", "from=0x1", "from=1&from=2", "from=%201")[recipe.variant % 7]
    return Built("drafter-2", "GET", f"sessions/{victim.path_id}/output?{query}", None, Expect.MALFORMED,
                 frozenset({BAD}), f", {query}")


# ---------------------------------------------------------------------- running it


def run_messages(fuzzer: MessageFuzzer, *, examples: int, seed: int,
                 database: ExampleDatabase | None = None) -> FuzzFailure | None:
    """Up to ``examples`` messages from ``seed``; a failure is shrunk to one minimal recipe."""
    last: dict[str, Any] = {}

    @settings(max_examples=examples, deadline=None, database=database, suppress_health_check=list(HealthCheck),
              verbosity=Verbosity.quiet, print_blob=False, report_multiple_bugs=False,
              phases=[Phase.reuse, Phase.generate, Phase.shrink] if database is not None
              else [Phase.generate, Phase.shrink])
    @given(recipes())
    def one(recipe: Recipe) -> None:
        try:
            fuzzer.loop.run(fuzzer.check(recipe))
        except Violation as violation:
            last["failure"] = FuzzFailure([recipe.to_step()], violation.text, violation.level, row=violation.row)
            raise
        finally:
            if fuzzer._progress is not None:
                fuzzer._progress(fuzzer.stats)

    with contextlib.suppress(Violation):  # the failure is in ``last``, shrunk
        seeded(one, seed, database)()
    failure: FuzzFailure | None = last.get("failure")
    fuzzer.stats.failure = failure
    return failure


def replay_messages(loop: LoopThread, steps: list[Step]) -> FuzzFailure | None:
    """Send each saved recipe once, in order, outside Hypothesis; the first violation is the failure."""
    fuzzer = MessageFuzzer(loop)
    for step in steps:
        try:
            loop.run(fuzzer.check(Recipe.from_step(step)))
        except Violation as violation:
            return FuzzFailure([step], violation.text, violation.level, row=violation.row)
    return None


__all__ = ["MUTATIONS", "RESOURCES", "Built", "Expect", "MessageFuzzer", "MessageStats", "Recipe", "mutate",
           "recipes", "replay_messages", "run_messages"]
