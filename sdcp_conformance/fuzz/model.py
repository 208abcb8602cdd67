"""The harness's model of a fuzzed session: what a correct verifier may answer to each request.

Computed from first principles only — the digest chain from the tokens
(:class:`~sdcp_conformance.harness.contexts.verifier.TrackedSession`), greedy tokens from
:mod:`sdcp_conformance.oracle.greedy`, rule-2 outcomes from
:mod:`sdcp_conformance.oracle.rule2` — never by asking reference code. Where the
draft allows several answers (two checks fail at once and the draft orders
neither, a fenced verifier that has not noticed the fence yet), every
acceptable answer is listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdcp_conformance.harness.contexts.verifier import TrackedSession
from sdcp_conformance.oracle import rule2 as oracle
from sdcp_conformance.oracle.greedy import greedy_continuation, next_logits
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.messages import Verdict

Row = list[float]

NOT_ASSIGNED = "R-6.3-AUTHORIZATION"
STALE_EPOCH = "R-6.3-FENCING"
STALE_BASE = "R-6.3-STALE-BASE"
STALE_ROUND = "R-6.3-STALE-ROUND"
LIMIT = "R-6.2-LIMIT"
Q_UNAVAILABLE = "R-6.3-Q-UNAVAILABLE"
ZERO_Q = "R-6.4-ZERO-Q"
ENDED = "R-6.5.2-ENDED"
"""Requirement rows (:data:`sdcp_conformance.judge.TABLE`) a refused proposal is judged against; the judge,
not the fuzzer, decides what each deviation is (P1-JUDGE-1)."""


@dataclass(frozen=True)
class RoundOutcome:
    """What the round must commit: the rule's a, the emitted tokens after truncation, and whether it finishes."""

    accepted: int
    emitted: list[int]
    finished: bool


@dataclass(frozen=True)
class Commit:
    """A new verdict for the next round with exactly this outcome."""

    outcome: RoundOutcome


@dataclass(frozen=True)
class Stored:
    """§6.3 Idempotency: the stored verdict, unchanged (``or_refuse``: a refusal is acceptable too)."""

    verdict: Verdict
    or_refuse: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Refuse:
    """A refusal as one of these rows says (any of them: the draft orders none of them before the others)."""

    rows: frozenset[str]


@dataclass(frozen=True)
class NoCommit:
    """After a fence: nothing new may be committed; any refusal, or the stored verdict of the round."""

    stored: Verdict | None


Expectation = Commit | Stored | Refuse | NoCommit


@dataclass
class FuzzedSession:
    """One session of a fuzz example: the tracked prefix plus what the verifier must remember about it."""

    tracked: TrackedSession
    rule: int
    assigned: str | None = None
    """The party named in the latest assignment the IUT accepted."""
    limit: int = 1
    closed: Action | None = None
    fence_epoch: int | None = None
    """A fence record with this (higher) epoch is in the log and no resume has happened yet."""
    history: list[Verdict] = field(default_factory=list)
    """Every verdict committed, all epochs, in order (the commit log must hold exactly these)."""
    policies: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """Every proposal sent (party, body), for exact retries."""
    q_objects: dict[str, list[Row] | None] = field(default_factory=dict)
    """q_rows URIs the harness published (rows as binary32 values) or named without publishing (None)."""

    @property
    def contract(self) -> dict[str, Any]:
        return self.tracked.contract

    @property
    def epoch(self) -> int:
        return self.tracked.epoch

    @property
    def committed(self) -> int:
        return len(self.tracked.output)

    def sampling_for(self, round_number: int) -> dict[str, int] | None:
        """§6.6: the contract's profile, replaced by the latest policy whose from_round has come (P1-POL-1)."""
        sampling: dict[str, int] | None = self.contract.get("sampling")
        for from_round, profile in self.policies:
            if from_round <= round_number:
                sampling = profile
        return sampling

    def current_verdict(self, round_number: int) -> Verdict | None:
        verdict = self.tracked.verdicts.get(round_number)
        return verdict if verdict is not None and verdict.epoch == self.epoch else None

    def earlier_epoch_verdict(self, round_number: int) -> Verdict | None:
        return next((v for v in self.history if v.round == round_number and v.epoch != self.epoch), None)

    def state_expected(self) -> dict[str, Any]:
        tracked = self.tracked
        return {"session": tracked.id, "epoch": tracked.epoch, "round": tracked.round,
                "committed": len(tracked.output), "digest": tracked.digest}


# ---------------------------------------------------------------------- what a proposal must get


def expect_proposal(fs: FuzzedSession, body: Mapping[str, Any], party: str, party_uri: str) -> Expectation:
    """§6.3 steps in the draft's order: authorization, fencing, idempotency, then the checks it leaves unordered."""
    problems: set[str] = set()
    if fs.closed is not None:
        problems.add(ENDED)  # §6.5.2 generation has ended; the draft orders it against nothing
    if fs.assigned is None or party != fs.assigned or body.get("drafter") != party_uri:
        return Refuse(frozenset({NOT_ASSIGNED, *problems}))
    if body.get("epoch") != fs.epoch:
        return Refuse(frozenset({STALE_EPOCH, *problems}))
    round_number = body.get("round")
    assert isinstance(round_number, int)
    stored = fs.current_verdict(round_number)
    if fs.fence_epoch is not None:
        return NoCommit(stored)
    if stored is not None:
        return Stored(stored)
    problems |= _refusals(fs, body)
    older = fs.earlier_epoch_verdict(round_number)
    if older is not None:
        # A verifier resumed on the same instance may still hold the earlier epoch's verdict of that round.
        return Stored(older, frozenset(problems | {STALE_BASE}))
    if problems:
        return Refuse(frozenset(problems))
    return Commit(round_outcome(fs, list(body["tokens"]), _q_of(fs, body), round_number))


def _refusals(fs: FuzzedSession, body: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    tracked = fs.tracked
    if body.get("base") != len(tracked.output) or body.get("base_digest") != tracked.digest:
        found.add(STALE_BASE)
    if body.get("round") != tracked.round + 1:
        found.add(STALE_ROUND)
    tokens = list(body["tokens"])
    if len(tokens) > min(fs.limit, int(fs.contract["m_max"])):
        found.add(LIMIT)
    if fs.rule == 2:
        uri = body.get("q_rows")
        rows = fs.q_objects.get(uri) if isinstance(uri, str) else None
        if rows is None:
            found.add(Q_UNAVAILABLE)
        elif any(row[token] <= 0.0 for row, token in zip(rows, tokens, strict=False)):
            found.add(ZERO_Q)
    return found


def _q_of(fs: FuzzedSession, body: Mapping[str, Any]) -> list[Row] | None:
    uri = body.get("q_rows")
    return fs.q_objects.get(uri) if isinstance(uri, str) else None


def round_outcome(fs: FuzzedSession, tokens: Sequence[int], q_rows: Sequence[Row] | None,
                  round_number: int) -> RoundOutcome:
    """§6.4 rule 1 or seeded rule 2, then §6.3's truncation after the first stop token and at max_new."""
    tracked = fs.tracked
    if fs.rule == 1:
        greedy = greedy_continuation(tracked.model, tracked.context, len(tokens) + 1)
        accepted = next((i for i, (x, g) in enumerate(zip(tokens, greedy, strict=False)) if x != g), len(tokens))
        raw = greedy[: accepted + 1]
    else:
        assert q_rows is not None
        sampling = fs.sampling_for(round_number)
        seed = (sampling or {}).get("seed")
        if seed is None:
            raise ValueError("the fuzzer gives every rule-2 profile a seed, so outcomes are exact")
        context = tracked.context
        p_rows = [p_row(tracked.model, [*context, *tokens[:i]], sampling) for i in range(len(tokens) + 1)]
        expected = oracle.rule2(p_rows, q_rows, tokens, seed, tracked.id, round_number)
        accepted, raw = expected.accepted, expected.emitted
    emitted, finished = truncate(raw, fs.contract["stop"], int(fs.contract["max_new"]), len(tracked.output))
    return RoundOutcome(accepted, emitted, finished)


def p_row(model: str, context: Sequence[int], sampling: Mapping[str, int] | None) -> Row:
    return oracle.distribution(next_logits(model, context).tolist(), sampling, 2)


def truncate(tokens: Sequence[int], stop: Sequence[int], max_new: int, committed: int) -> tuple[list[int], bool]:
    """§6.3: "It truncates the emitted tokens after the first stop token and at max_new"."""
    emitted: list[int] = []
    for token in tokens:
        if committed + len(emitted) >= max_new:
            break
        emitted.append(token)
        if token in stop:
            return emitted, True
    return emitted, committed + len(emitted) >= max_new


# ---------------------------------------------------------------------- checking a verdict


def verdict_problems(fs: FuzzedSession, verdict: Verdict, outcome: RoundOutcome) -> list[tuple[str, str]]:
    """(row, what) for every way ``verdict`` differs from the outcome the round must have."""
    tracked = fs.tracked
    found: list[tuple[str, str]] = []
    if verdict.session != tracked.id or verdict.epoch != tracked.epoch:
        found.append(("R-6.3-COMMIT", f"the verdict names session {verdict.session.hex()} epoch {verdict.epoch}"))
    if verdict.round != tracked.round + 1:
        found.append(("R-6.3-COMMIT", f"round {verdict.round} is not the last round plus one ({tracked.round + 1})"))
    if list(verdict.emitted) != outcome.emitted:
        rule_row = "R-6.4-RULE1" if fs.rule == 1 else "R-6.4-HMAC"
        found.append((rule_row, f"emitted {list(verdict.emitted)}, the rule gives {outcome.emitted} (§6.4, §6.3)"))
    digest = extend_digest(tracked.digest, verdict.emitted)
    if verdict.committed != len(tracked.output) + len(verdict.emitted) or verdict.digest != digest:
        found.append(("R-4.2-CHAIN", f"committed {verdict.committed} / digest {verdict.digest.hex()[:16]}… is not "
                                     f"d[n] extended by the emitted tokens (§4.2; expected {digest.hex()[:16]}…)"))
    if verdict.accepted != outcome.accepted:
        found.append(("P1-CTL-5/ACCEPTED", f"accepted {verdict.accepted}, the rule's a is {outcome.accepted}"))
    found.extend(_action_problems(fs, verdict, outcome))
    return found


def _action_problems(fs: FuzzedSession, verdict: Verdict, outcome: RoundOutcome) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    m_max = int(fs.contract["m_max"])
    if not 1 <= verdict.m_cap <= m_max:
        found.append(("R-6.5.1-M-CAP", f"m_cap {verdict.m_cap} is outside 1..m_max ({m_max}) (§6.5.1)"))
    action = verdict.action
    if outcome.finished and action is not Action.FINISH:
        row = "P1-CTL-5/FINISH" if action is Action.FAIL else "R-6.3-TRUNCATE"
        found.append((row, f"the round ends the session (stop token or max_new) but action is {action.name}"))
    if not outcome.finished and action is Action.SELF_DECODE and 3 in fs.contract.get("fallback", []):
        found.append(("R-6.5.2-SELF-PERMITTED", f"action self_decode although the contract's self_load "
                      f"{fs.contract.get('self_load')} is below the IUT's known load (§6.5.2: it must be skipped)"))
    elif not outcome.finished and action not in (Action.CONTINUE, Action.REDUCE, Action.FAIL):
        found.append(("R-6.5.2-ESCALATE", f"action {action.name}: the contract's fallback list holds only reduce "
                                          "(§6.5.2)"))
    return found


def apply_verdict(fs: FuzzedSession, verdict: Verdict) -> None:
    """Advance the model by a verdict already judged correct."""
    tracked = fs.tracked
    tracked.output.extend(verdict.emitted)
    tracked.round = verdict.round
    tracked.verdicts[verdict.round] = verdict
    fs.history.append(verdict)
    fs.limit = min(int(fs.contract["m_max"]), verdict.m_cap)
    if verdict.action in (Action.FINISH, Action.FAIL):
        fs.closed = verdict.action


def log_problems(fs: FuzzedSession, records: Sequence[Any]) -> list[str]:
    """§6.3 Commit, §6.8, P1-LOG-1, P1-RTR-6: the log's live records are exactly the verdicts, in order.

    Judged against R-6.8-RECORD (both it and R-6.3-RECORD-FIRST are MUST)."""
    live: list[Any] = []
    fence = 0
    for record in records:
        if not isinstance(record, dict) or "epoch" not in record:
            return [f"the commit log holds a record without an epoch: {record!r} (§6.8)"]
        if set(record) == {"epoch"}:
            fence = max(fence, int(record["epoch"]))
        elif int(record["epoch"]) >= fence:
            live.append(record)  # a lower-epoch record after a fence is dead (the writer was fenced off)
    expected = [{"epoch": v.epoch, "round": v.round, "emitted": list(v.emitted), "committed": v.committed,
                 "digest": v.digest} for v in fs.history]
    if len(live) != len(expected):
        return [f"the commit log holds {len(live)} live commit records, but {len(expected)} verdicts were sent "
                "(§6.3: the record is appended before the verdict, and only then)"]
    for got, want in zip(live, expected, strict=True):
        shown = {key: got.get(key) for key in want}
        if shown != want:
            return [f"commit record for round {want['round']} is {shown!r}, the verdict says {want!r}"]
    return []


__all__ = [
    "ENDED",
    "LIMIT",
    "NOT_ASSIGNED",
    "Q_UNAVAILABLE",
    "STALE_BASE",
    "STALE_EPOCH",
    "STALE_ROUND",
    "ZERO_Q",
    "Commit",
    "Expectation",
    "FuzzedSession",
    "NoCommit",
    "Refuse",
    "RoundOutcome",
    "Stored",
    "apply_verdict",
    "expect_proposal",
    "log_problems",
    "p_row",
    "round_outcome",
    "truncate",
    "verdict_problems",
]
