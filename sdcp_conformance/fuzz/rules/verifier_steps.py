"""The verifier's steps: played against the IUT through the harness roles, every answer judged against the model.

One :class:`StepExecutor` (on the executor base,
:class:`~sdcp_conformance.fuzz.executor.RoleExecutor`) serves one example (a fresh :class:`VerifierContext`,
so cache objects and the transcript are the example's own). Each step resolves
its generated arguments against the model, sends what the harness (as router,
drafter or cache) would send, and checks the answer and then the invariants:
the commit log's live records are exactly the verdicts sent (which also ties
the log to the output), digests recomputed from tokens, rounds consecutive.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

import numpy as np

from sdcp_conformance.fuzz import model as m
from sdcp_conformance.fuzz.executor import RoleExecutor
from sdcp_conformance.fuzz.judging import FuzzJudge, judging_scope
from sdcp_conformance.fuzz.steps import Step, Violation
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.specs.verifier import VerifierEnvironment
from sdcp_conformance.judge import Level
from sdcp_conformance.models.bigram import bigram_logits
from sdcp_conformance.oracle import rule2 as oracle
from sdcp_conformance.oracle.greedy import greedy_continuation
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Output, SessionState, Verdict
from sdcp_conformance.suites.verifier.contract import loose_encode

MODEL = "bigram"
"""Closed-form logits: exact and cheap, so thousands of rounds cost little (V = 128)."""
VOCAB = 128
PROMPTS = ((5, 9, 14), (1, 2, 3, 4), (77,), (120, 3, 40, 41, 42))
PROPOSAL_KINDS = ("valid", "garbage", "stale_base", "wrong_digest", "wrong_round", "past_round", "stale_epoch",
                  "over_limit", "no_q", "missing_q", "zero_q", "unassigned")
DRAFTERS = ("drafter-1", "drafter-2")
MAX_SESSIONS = 3
SKIP_LOAD = 90
"""The load the embedded IUT is pinned to when a generated session needs self_decode to be skipped."""


FUZZ_CASE = judging_scope(
    "FUZZ-VERIFIER-STATEFUL", "6.3", "On receiving a proposal, the verifier performs these steps:", Level.MUST,
    title="generated sequences judged against every verifier row", role="verifier")
"""The judging scope of a fuzz example: every row a verifier can be judged on."""


class StepExecutor(RoleExecutor):
    """The model of one example's sessions plus the code that plays each step."""

    def __init__(self, env: VerifierEnvironment, example: str, judge: FuzzJudge | None = None) -> None:
        super().__init__()
        self.env = env
        self.ctx = VerifierContext(env, FUZZ_CASE, 0, f"fuzz-{example}")
        self.judges = judge or FuzzJudge()
        self.sessions: list[m.FuzzedSession] = []

    # ------------------------------------------------------------------ around every step

    def enter(self) -> None:
        self.env.current = self.ctx.transcript

    def judge_step(self, step: Step) -> None:
        """The commit log's live records are exactly the verdicts sent, after every step."""
        for fs in self.sessions:
            problems = m.log_problems(fs, self.ctx.read_log(fs.tracked))
            if problems:
                self.judges.fail("R-6.8-RECORD", f"after {step.describe()}: {problems[0]}")

    def session(self, index: Any) -> m.FuzzedSession | None:
        return self.sessions[int(index) % len(self.sessions)] if self.sessions else None

    # ------------------------------------------------------------------ router role

    async def open(self, args: dict[str, Any]) -> None:
        if len(self.sessions) >= MAX_SESSIONS:
            return
        rule = 2 if args.get("rule") == 2 else 1
        prompt = PROMPTS[int(args.get("prompt", 0)) % len(PROMPTS)]
        stop_at = args.get("stop_at")
        stop = [] if stop_at is None else [greedy_continuation(MODEL, prompt, int(stop_at) + 1)[-1]]
        overrides: dict[str, Any] = {"rule": rule, "m_max": int(args.get("m_max", 4)), "stop": stop,
                                     "max_new": int(args.get("max_new", 16)),
                                     "low_rounds": int(args.get("low_rounds", 1000)), "fallback": [1]}
        load = self._known_load() if args.get("self_skip") else None
        if load is not None and load > 0:
            # §6.5.2: self_decode "is permitted only if ... the verifier's current load does not exceed" self_load;
            # with self_load below the IUT's known load it must be skipped, so the ladder is reduce as before.
            overrides.update(fallback=[3, 1], self_load=load - 1)
        if rule == 2:
            overrides["sampling"] = {"seed": int(args.get("seed", 1)), "temperature_milli": 1000}
        tracked = self.ctx.track(MODEL, self.ctx.contract(MODEL, **overrides), prompt)
        answer = await self._send_open(tracked, int(args.get("encoding", 0)))
        fs = m.FuzzedSession(tracked, rule)
        self.require_state(fs, answer, "POST sessions", row="R-6.1-OPEN")
        self.sessions.append(fs)

    def _known_load(self) -> int | None:
        """The IUT's load when the harness knows it: pinned by the target, or pinned here (the embedded IUT)."""
        if self.env.config.pinned_load is not None:
            return self.env.config.pinned_load
        if getattr(self.env, "embedded_app", None) is not None:  # pinned in-process (a hook is for the cases)
            self.env.pin_load(SKIP_LOAD)
            return SKIP_LOAD
        return None

    async def _send_open(self, tracked: Any, encoding: int) -> Any:
        """P1-MSG-1: receivers accept any well-formed encoding and digest their own deterministic
        re-encoding of the contract — so the session-open is sometimes sent loosely encoded."""
        if encoding == 0:
            return await self.ctx.open(tracked)
        body = loose_encode(self.ctx.opening(tracked), reverse=encoding == 1, indefinite=encoding == 2,
                            wide=encoding == 3)
        return await self.ctx.iut.send("router", "POST", "sessions", body)

    async def assign(self, args: dict[str, Any]) -> None:
        fs = self.session(args.get("s", 0))
        if fs is None:
            return
        drafter = DRAFTERS[int(args.get("drafter", 0)) % 2]
        m_init = int(args.get("m_init", 4))
        answer = await self.ctx.assign(fs.tracked, drafter, m_init=m_init)
        if self.refusal_ok(fs, answer, "PUT sessions/{id}/drafter"):
            return
        self.require_state(fs, answer, "PUT sessions/{id}/drafter")
        fs.assigned = drafter
        fs.limit = min(int(fs.contract["m_max"]), m_init)  # P1-CTL-1

    async def policy(self, args: dict[str, Any]) -> None:
        fs = self.session(args.get("s", 0))
        if fs is None:
            return
        from_round = max(0, fs.tracked.round + int(args.get("delta", 1)))
        sampling = {"temperature_milli": int(args.get("temperature", 1000)), "seed": int(args.get("seed", 7))}
        answer = await self.ctx.policy(fs.tracked, from_round, sampling)
        if self.refusal_ok(fs, answer, "POST sessions/{id}/policy"):
            return
        if from_round <= fs.tracked.round:
            self.judge_refusal(fs, answer, m.Refuse(frozenset({"P1-POL-1/STALE"})),
                               f"a policy with from_round {from_round} <= round {fs.tracked.round} (P1-POL-1)",
                               state_row="P1-POL-1/STALE")
            self._forget_if_accepted(fs, answer)
            return
        self.require_state(fs, answer, "POST sessions/{id}/policy")
        fs.policies.append((from_round, sampling))

    def refusal_ok(self, fs: m.FuzzedSession, answer: Answer, what: str) -> bool:
        """Closed (P1-CTL-3: 410) or fenced (§6.3: stop serving, once noticed) sessions may refuse router calls."""
        if fs.closed is not None:
            self.judge_refusal(fs, answer, m.Refuse(frozenset({"P1-CTL-3/CLOSED"})), f"{what} when closed")
            self._forget_if_accepted(fs, answer)
            return True
        if fs.fence_epoch is not None and not answer.ok:
            self.judges.condition(answer.status is not None and answer.status < 500, "R-5.1-RESOURCES",
                                  f"{what} on a fenced session: {answer.describe()}")
            return True
        return False

    def _forget_if_accepted(self, fs: m.FuzzedSession, answer: Answer) -> None:
        """A profile-level refusal that was accepted instead (a NON-STRICT finding, kept) leaves the session in a
        state the model cannot know; it is dropped from the example, so no later step blames the IUT for it."""
        if answer.ok and fs in self.sessions:
            self.sessions.remove(fs)

    async def fence(self, args: dict[str, Any]) -> None:
        """§6.9 verifier failure, first half: the router appends a fence record ``{epoch: E+1}``."""
        fs = self.session(args.get("s", 0))
        if fs is None or fs.fence_epoch is not None:
            return
        self.env.cache.enforce_fences = bool(args.get("enforcing", True))
        stored = self.env.cache.store.get(_path(fs.tracked.commit_log), now=0.0)
        before = stored.data if stored is not None else b""
        self.ctx.put_object(fs.tracked.commit_log.removeprefix(self.ctx.cache_uri("")),
                            before + encode({"epoch": fs.epoch + 1}))
        fs.fence_epoch = fs.epoch + 1

    async def resume(self, args: dict[str, Any]) -> None:
        """§6.9 second half: open at the new epoch with ``resume``, then name the drafter again."""
        fs = self.session(args.get("s", 0))
        if fs is None or fs.fence_epoch is None or fs.closed is not None:
            return
        tracked = fs.tracked
        tokens_uri = self.ctx.put_object(f"committed-{tracked.id.hex()}-{fs.fence_epoch}", encode(tracked.output))
        resume = {"round": tracked.round, "committed": len(tracked.output), "digest": tracked.digest,
                  "committed_tokens": tokens_uri}
        tracked.epoch = fs.fence_epoch
        answer = await self.ctx.open(tracked, resume=resume)
        fs.fence_epoch, fs.assigned, fs.limit = None, None, 1
        latest = fs.sampling_for(tracked.round + 1)
        fs.policies = []
        self.require_state(fs, answer, "POST sessions with resume (§6.9)", row="R-6.9-RESUME")
        if fs.rule == 2 and latest != fs.contract.get("sampling") and latest is not None:
            # The resumed verifier knows only the contract: the router re-sends the profile in force (P1-RTR-4).
            await self.policy({"s": self.sessions.index(fs), "delta": 1, **_policy_args(latest)})
        await self.assign({"s": self.sessions.index(fs), "drafter": args.get("drafter", 0), "m_init": 4})

    # ------------------------------------------------------------------ drafter role

    async def propose(self, args: dict[str, Any]) -> None:
        fs = self.session(args.get("s", 0))
        if fs is None:
            return
        kind = _kind(args.get("kind", "valid"))
        party, body = self.build(fs, kind, max(1, int(args.get("m", 1))), int(args.get("choice", 0)))
        await self.send_and_judge(fs, party, body, f"a {kind} proposal")

    async def retry(self, args: dict[str, Any]) -> None:
        fs = self.session(args.get("s", 0))
        if fs is None or not fs.sent:
            return
        party, body = fs.sent[int(args.get("index", 0)) % len(fs.sent)]
        await self.send_and_judge(fs, party, body, f"an exact retry of the round-{body['round']} proposal")

    async def concurrent(self, args: dict[str, Any]) -> None:
        """Two identical copies at once: both must get the one verdict (§6.3 "wait for that verdict")."""
        fs = self.session(args.get("s", 0))
        if fs is None:
            return
        party, body = self.build(fs, "valid", max(1, int(args.get("m", 1))), int(args.get("choice", 0)))
        expectation = m.expect_proposal(fs, body, party, self.env.party_uri(party))
        first, second = await asyncio.gather(self.ctx.send_proposal(body, party=party),
                                             self.ctx.send_proposal(body, party=party))
        what = "concurrent identical proposals"
        verdict = self.judge(fs, expectation, first, what)
        if isinstance(expectation, m.Commit) and verdict is not None:
            other = _verdict_of(second, what)
            self.judges.condition(other == verdict, "R-6.3-IDEMPOTENCY",
                                  f"{what}: the two copies got different answers: {verdict} vs {other}")
            m.apply_verdict(fs, verdict)
        else:
            self.judge(fs, expectation, second, what)

    async def send_and_judge(self, fs: m.FuzzedSession, party: str, body: dict[str, Any], what: str) -> None:
        expectation = m.expect_proposal(fs, body, party, self.env.party_uri(party))
        answer = await self.ctx.send_proposal(body, party=party)
        verdict = self.judge(fs, expectation, answer, what)
        if verdict is not None and isinstance(expectation, m.Commit):
            m.apply_verdict(fs, verdict)

    def build(self, fs: m.FuzzedSession, kind: str, count: int, choice: int) -> tuple[str, dict[str, Any]]:
        """The body a drafter would send for proposal ``kind``; published q rows are remembered."""
        tracked = fs.tracked
        rng = random.Random(choice)
        party = fs.assigned or DRAFTERS[choice % 2]
        if kind == "unassigned":
            party = DRAFTERS[1] if party == DRAFTERS[0] else DRAFTERS[0]
        if kind == "over_limit":
            count = min(fs.limit, int(fs.contract["m_max"])) + 1 + choice % 2
        tokens, rows = self.draft(fs, count, rng, garbage=kind == "garbage")
        overrides: dict[str, Any] = _overrides(fs, kind, rng)
        if fs.rule == 2:  # rule 1 needs no rows (P1-DRF-4), so q kinds are plain proposals there
            overrides.setdefault("q_rows", self.publish(fs, kind, rows, tokens, rng))
        body = self.ctx.proposal(tracked, tokens, party, **overrides)
        fs.sent.append((party, body))
        return party, body

    def draft(self, fs: m.FuzzedSession, count: int, rng: random.Random, *,
              garbage: bool) -> tuple[list[int], list[list[float]]]:
        context = fs.tracked.context
        if garbage:
            tokens = [rng.randrange(VOCAB) for _ in range(count)]
            return tokens, [_q_row([*context, *tokens[:i]]) for i in range(count)]
        if fs.rule == 1:
            tokens = greedy_continuation(MODEL, context, count)
            return tokens, [_q_row([*context, *tokens[:i]]) for i in range(count)]
        tokens, rows = [], []
        for _ in range(count):
            row = _q_row([*context, *tokens])
            rows.append(row)
            tokens.append(oracle.draw(row, rng.random()))  # sampled from exactly the row it publishes
        return tokens, rows

    def publish(self, fs: m.FuzzedSession, kind: str, rows: list[list[float]], tokens: list[int],
                rng: random.Random) -> str | None:
        name = f"q-{fs.tracked.id.hex()[:8]}-{len(fs.sent)}"
        if kind == "no_q":
            return None
        if kind == "missing_q":
            uri = self.ctx.cache_uri(name + "-absent")
            fs.q_objects[uri] = None
            return uri
        if kind == "zero_q":
            position = rng.randrange(len(tokens))
            rows = [list(row) for row in rows]
            rows[position][tokens[position]] = 0.0
        uri = self.ctx.publish_q(name, np.asarray(rows))
        fs.q_objects[uri] = rows
        return uri

    # ------------------------------------------------------------------ output

    async def output(self, args: dict[str, Any]) -> None:
        """§6.7: tokens from any index, never changing meaning; epoch on every message; final when closed."""
        fs = self.session(args.get("s", 0))
        if fs is None:
            return
        committed = fs.committed
        if fs.closed is None and committed == 0:
            return  # nothing to read without waiting out the long-poll
        span = committed + 2 if fs.closed is not None else committed
        start = int(args.get("start", 0)) % span
        answer = await self.ctx.output(fs.tracked, start)
        if fs.fence_epoch is not None and not answer.ok:
            return  # stopped serving (§6.3)
        output = _message(answer, Output, "GET output")
        self.check_output(fs, output, start)

    def check_output(self, fs: m.FuzzedSession, output: Output, start: int) -> None:
        want = fs.tracked.output[start:]
        got = list(output.tokens)
        judge = self.judges
        judge.condition(output.epoch == fs.epoch and output.session == fs.tracked.id, "R-6.7-STABLE",
                        f"output carries epoch {output.epoch}, the session's is {fs.epoch} (§6.7)")
        judge.condition(got == want[: len(got)] and not (want and not got), "R-6.7-DELIVERY",
                        f"output from {start} is {got}, the committed tokens there are {want} (§6.7: indices "
                        "are stable)")
        judge.condition(not output.final or (fs.closed is not None and len(got) == len(want)), "R-6.7-FINAL",
                        f"output from {start} says final, but the session is {fs.closed or 'open'} with "
                        f"{len(want)} tokens from there")
        if fs.closed is not None and start >= fs.committed:
            judge.condition(output.final, "P1-OUT-1/AFTER-FINAL",
                            "reading past the end of a closed session must give the final message (P1-OUT-1)")
        judge.condition(not output.final or output.finish is fs.closed, "R-6.7-FINAL",
                        f"the final message's finish is {output.finish}, the session ended with {fs.closed}")

    # ------------------------------------------------------------------ judging

    def judge(self, fs: m.FuzzedSession, expectation: m.Expectation, answer: Answer, what: str) -> Verdict | None:
        judge = self.judges
        if isinstance(expectation, m.Commit):
            verdict = _verdict_of(answer, what)
            for row, text in m.verdict_problems(fs, verdict, expectation.outcome):
                judge.fail(row, f"{what}: {text}")
            return verdict
        if isinstance(expectation, m.Stored):
            if answer.ok and _verdict_of(answer, what) == expectation.verdict:
                return None
            if expectation.or_refuse and answer.status is not None and 400 <= answer.status < 500:
                return None
            judge.fail("R-6.3-IDEMPOTENCY", f"{what}: round {expectation.verdict.round} has a verdict, which must be "
                       f"returned unchanged (§6.3 Idempotency); got {_shown(answer)}")
            return None
        if isinstance(expectation, m.NoCommit):
            if not answer.ok:
                return None
            if expectation.stored is not None and _verdict_of(answer, what) == expectation.stored:
                return None
            judge.fail("R-6.3-FENCED-APPEND", f"{what}: a verdict after the commit log was fenced (§6.3, §6.8): "
                       f"{_shown(answer)}")
            return None
        self.judge_refusal(fs, answer, expectation, what)
        return None

    def judge_refusal(self, fs: m.FuzzedSession, answer: Answer, expectation: m.Refuse, what: str, *,
                      state_row: str = "R-6.3-STALE-STATE") -> None:
        exact = self.judges.refusal(answer, sorted(expectation.rows), what)
        if exact and answer.problem_type is not None and answer.problem_type.suffix == "sdcp-stale-base":
            self.check_stale_state(fs, answer, what, state_row)

    def check_stale_state(self, fs: m.FuzzedSession, answer: Answer, what: str, row: str) -> None:
        """§6.3 "and the current session-state" (P1-JUDGE-1: its absence is FAILED; P1-ERR-2 its encoding)."""
        problem = answer.problem
        raw = problem.members.get("state") if problem is not None else None
        if raw is None:
            self.judges.fail(row, f"{what}: the 409 carries no state member")
            return
        state = problem.state if problem is not None else None
        if state is None:
            self.judges.fail("P1-ERR-2/ENCODING", f"{what}: the 409's state is not in P1-ERR-2's encoding: {raw!r}")
            return
        want = fs.state_expected()
        self.judges.condition(all(state.get(key) == value for key, value in want.items()), row,
                              f"{what}: the 409's state {_hexed(state)} is not the current session-state "
                              f"{_hexed(want)}")

    def require_state(self, fs: m.FuzzedSession, answer: Answer, what: str, *, row: str = "R-5.1-RESOURCES") -> None:
        state = _message(answer, SessionState, what, row=row)
        want = fs.state_expected()
        got = {key: getattr(state, key) for key in want}
        self.judges.condition(got == want, "R-4.2-CHAIN",
                              f"{what}: session-state {_hexed(got)} is not the harness's {_hexed(want)}")


def _overrides(fs: m.FuzzedSession, kind: str, rng: random.Random) -> dict[str, Any]:
    tracked = fs.tracked
    n = len(tracked.output)
    if kind == "stale_base":
        if n == 0:
            return {"base": 1, "base_digest": hashlib.sha256(b"ahead").digest()}
        back = 1 + rng.randrange(n)
        return {"base": n - back, "base_digest": _digest_at(tracked, n - back)}
    if kind == "wrong_digest":
        return {"base_digest": hashlib.sha256(rng.randbytes(8)).digest()}
    if kind == "wrong_round":
        return {"round": tracked.round + 2 + rng.randrange(3)}
    if kind == "past_round":
        return {"round": rng.randrange(tracked.round + 1)}
    if kind == "stale_epoch":
        return {"epoch": fs.epoch + 1 if rng.random() < 0.5 or fs.epoch == 0 else fs.epoch - 1}
    if kind == "no_q" and fs.rule == 2:
        return {"q_rows": None}
    return {}


def _kind(value: Any) -> str:
    if isinstance(value, str) and value in PROPOSAL_KINDS:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return PROPOSAL_KINDS[value % len(PROPOSAL_KINDS)]
    raise ValueError(f"unknown proposal kind {value!r}")


def _digest_at(tracked: TrackedSession, n: int) -> bytes:
    from sdcp_conformance.protocol.chain import extend_digest

    return extend_digest(tracked.d0, tracked.output[:n])


def _q_row(context: list[int]) -> list[float]:
    """A drafter's row: half uniform, half the target's softmax at temperature 2 — positive everywhere."""
    logits = np.asarray(bigram_logits(context[-1], MODEL), dtype=np.float64) / 2.0
    weights = np.exp(logits - logits.max())
    row = 0.5 / VOCAB + 0.5 * weights / weights.sum()
    return [float(value) for value in row.astype(np.float32)]


def _policy_args(sampling: dict[str, int]) -> dict[str, int]:
    return {"temperature": sampling.get("temperature_milli", 1000), "seed": sampling.get("seed", 7)}


def _verdict_of(answer: Answer, what: str) -> Verdict:
    verdict: Verdict = _message(answer, Verdict, what)
    return verdict


def _message(answer: Answer, kind: type[Any], what: str, *, row: str = "R-5.1-RESOURCES") -> Any:
    """A success answer's message; a refusal or a malformed body ends the example (nothing to go on with)."""
    if not answer.ok:
        raise Violation(f"{what}: expected success, got {_shown(answer)}", row=row)
    try:
        return answer.message(kind)
    except MalformedMessage as exc:
        raise Violation(f"{what}: the answer is not a well-formed {kind.__name__}: {exc}") from None


def _shown(answer: Answer) -> str:
    if answer.ok:
        try:
            return f"{answer.status} {answer.decoded()!r}"[:400]
        except MalformedMessage:
            return f"{answer.status} (undecodable body)"
    return answer.describe()


def _hexed(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value.hex()[:16] if isinstance(value, bytes) else value for key, value in values.items()}


def _path(uri: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(uri).path


StepExecutor.rules = {
    "open": StepExecutor.open,
    "assign": StepExecutor.assign,
    "policy": StepExecutor.policy,
    "fence": StepExecutor.fence,
    "resume": StepExecutor.resume,
    "propose": StepExecutor.propose,
    "retry": StepExecutor.retry,
    "concurrent": StepExecutor.concurrent,
    "output": StepExecutor.output,
}

__all__ = ["DRAFTERS", "FUZZ_CASE", "MAX_SESSIONS", "MODEL", "PROPOSAL_KINDS", "StepExecutor"]
