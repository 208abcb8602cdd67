"""What a verifier case works with: the router, drafters and cache the harness plays, sessions, judgements.

The harness keeps its own model of every session it opens — prompt, contract
digest, committed tokens, round, epoch — and recomputes the digest chain from
the tokens (§4.2), so a verdict's ``digest`` and ``committed`` are checked
against first principles on every round, whatever the case is about.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case
from sdcp_conformance.harness.environment import PlayedParts, RoleContext
from sdcp_conformance.harness.features import message_features
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.judging import session_id_for
from sdcp_conformance.harness.roles.played_drafters import ProposingDrafters
from sdcp_conformance.harness.roles.played_router import PlayedRouter
from sdcp_conformance.harness.rule2_judging import JudgeHost
from sdcp_conformance.harness.self_check import as_sent
from sdcp_conformance.judge.declaration import CLAIM_ROW
from sdcp_conformance.models.registry import MockModel, mock_model
from sdcp_conformance.oracle.greedy import greedy_continuation
from sdcp_conformance.protocol.chain import contract_digest, extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import decode_sequence
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.messages import Message, Output, SessionState, Verdict
from sdcp_conformance.protocol.problems import ProblemType

M = TypeVar("M", bound=Message)

DEFAULT_PROMPT = (5, 9, 14)


@dataclass
class TrackedSession:
    """The harness's own account of a session it opened at the IUT."""

    id: bytes
    epoch: int
    contract: dict[str, Any]
    model: str
    prompt: list[int]
    commit_log: str
    output: list[int] = field(default_factory=list)
    round: int = 0
    verdicts: dict[int, Verdict] = field(default_factory=dict)

    _d0: tuple[str, tuple[int, ...], bytes] | None = field(default=None, repr=False, compare=False)
    """(repr of the contract, the prompt, d[0]): read every round, recomputed only when a case changed either.
    ``repr`` tells 1, 1.0 and True apart, which encode differently."""

    @property
    def d0(self) -> bytes:
        key, prompt = repr(self.contract), tuple(self.prompt)
        cached = self._d0
        if cached is None or cached[0] != key or cached[1] != prompt:
            cached = self._d0 = (key, prompt, prefix_digest(contract_digest(self.contract), self.prompt))
        return cached[2]

    _chain: tuple[bytes, list[int], list[bytes]] | None = field(default=None, repr=False, compare=False)
    """(d[0], the output it was computed for, d[1..n]): ``digest`` is read after every round of sessions that
    grow to thousands of tokens, so the chain is extended from where the output still agrees, not recomputed."""

    @property
    def digest(self) -> bytes:
        start = self.d0
        cached = self._chain
        if cached is None or cached[0] != start:
            cached = (start, [], [])
        _, tokens, chain = cached
        output = self.output
        if output[:len(tokens)] == tokens:  # the common case, a session that grew: one comparison in C
            agree = len(tokens)
        else:
            agree = 0
            for old, new in zip(tokens, output, strict=False):
                if old != new:
                    break
                agree += 1
        del tokens[agree:], chain[agree:]
        last = chain[-1] if chain else start
        for token in self.output[agree:]:
            last = extend_digest(last, [token])
            tokens.append(token)
            chain.append(last)
        self._chain = cached
        return last

    @property
    def path_id(self) -> str:
        """P1-MSG-3: {id} is the unpadded base64url of the session id."""
        return base64.urlsafe_b64encode(self.id).rstrip(b"=").decode()

    @property
    def context(self) -> list[int]:
        return [*self.prompt, *self.output]


class VerifierParts(PlayedParts, Protocol):
    """What a verifier case takes from its environment (:class:`~..specs.verifier.VerifierEnvironment`)."""

    router: PlayedRouter
    session_nonce: bytes

    def party_uri(self, name: str) -> str: ...

    def owns(self, context: Any, session_id: bytes) -> None: ...

    def capabilities(self) -> set[str]: ...

    async def set_load(self, load: int | None) -> None: ...

    def judge_host(self) -> JudgeHost: ...

    def claims(self) -> frozenset[str] | None: ...


class VerifierContext(RoleContext[VerifierParts]):
    """One verifier case's view of the harness: its router, drafters and cache, and the sessions it tracks."""

    def __init__(self, env: VerifierParts, case: Case, seed: int, run: str = "main") -> None:
        super().__init__(env, case, seed, run)
        self.sessions: list[TrackedSession] = []
        self.router: PlayedRouter = env.router
        """The played router: the verifier's events and status reports (§5.1 Table 1)."""
        self.drafters = ProposingDrafters(env.iut.send, env.party_uri)
        """The played drafters: they propose and read output, each as its own identity."""

    async def set_load(self, load: int) -> bool:
        """Set the IUT's load where the target offers it (``load:control``; False where it does not); raises
        :class:`~..load_control.LoadControlError` when the hook or command fails. The environment gives the load
        back after the case."""
        if "load:control" not in self.env.capabilities():
            return False
        await self.env.set_load(load)
        return True

    def judge_host(self) -> JudgeHost:
        """Where the rule-2 tests of a statistical case run (:mod:`~..rule2_judging`)."""
        return self.env.judge_host()

    def hold_to_claims(self, answer: Answer, features: frozenset[str], what: str) -> None:
        """D-JUDGE-DECL-1: a request using claimed features (every feature, without a declaration) refused as not
        supported (``sdcp-bad-contract``) contradicts the claim; the case stops on the claim's row."""
        if answer.status != ProblemType.BAD_CONTRACT.status or answer.problem_type is not ProblemType.BAD_CONTRACT:
            return
        claims = self.env.claims()
        claimed = sorted(features if claims is None else features & claims)
        if claimed:
            whose = "the declaration claims" if claims is not None else "without a declaration every feature is claimed"
            self.fail(f"{what}: the IUT refused a contract using {', '.join(claimed)} as not supported "
                      f"({answer.describe()}), which {whose}", row=CLAIM_ROW,
                      expected=[f"{', '.join(claimed)} supported, as claimed"], actual=answer.describe())

    def expect_ok(self, answer: Answer, kind: type[M], *, what: str = "", row: str = "R-5.1-RESOURCES") -> M:
        """A 2xx answer carrying a well-formed ``kind`` (P1-MSG-4: any 2xx is success); otherwise the case stops."""
        label = what or kind.__name__
        if not answer.ok:
            self.fail(f"{label}: expected success, got {answer.describe()}", row=row, expected=["2xx"],
                      actual=answer.describe())
        if answer.media_type_ok is False:
            self.fail(f"{label}: the success body is labelled {answer.content_type!r}, not application/sdcp+cbor "
                      "(§5.1)", row="R-5.1-MEDIA-TYPE", expected=["application/sdcp+cbor"],
                      actual=str(answer.content_type))
        try:
            return answer.message(kind)
        except MalformedMessage as exc:
            self.fail(f"{label}: the answer is not a well-formed {kind.__name__}: {exc}", row="R-5.1-RESOURCES",
                      actual=answer.describe())

    # ------------------------------------------------------------------ models and contracts

    def mock(self, model: str = "bigram") -> MockModel:
        if model not in self.env.config.models:
            # The target file was validated against the suite's needs (target.py), so this is a case that
            # forgot to declare ``requires=("model:…",)``: a harness bug, not a reason to skip silently.
            raise InvalidArgument(f"harness error: case {self.case_id} uses model {model!r} without requiring it")
        return mock_model(model)

    def contract(self, model: str = "bigram", **overrides: Any) -> dict[str, Any]:
        """A valid contract for ``model``; ``None`` values remove a member."""
        info = self.mock(model)
        contract: dict[str, Any] = {
            "target": info.model_sha256, "tokenizer": info.tokenizer_sha256, "rule": 1, "m_max": 8,
            "max_new": 64, "stop": [], "low_rounds": 1000, "fallback": [1],
        }
        contract.update(overrides)
        return {key: value for key, value in contract.items() if value is not None}

    def new_session_id(self) -> bytes:
        return session_id_for(self.rng, self.env.session_nonce)

    def read_log(self, session: TrackedSession) -> list[dict[str, Any]]:
        """The session's commit log as the harness's cache holds it (P1-LOG-1)."""
        stored = self.env.cache.store.get(_path_of(session.commit_log), now=0.0)
        return [] if stored is None else list(decode_sequence(stored.data))

    # ------------------------------------------------------------------ router role

    def opening(self, session: TrackedSession, **overrides: Any) -> dict[str, Any]:
        body = {"session": session.id, "epoch": session.epoch, "contract": session.contract,
                "prompt": session.prompt, "commit_log": session.commit_log}
        body.update(overrides)
        return {key: value for key, value in body.items() if value is not None}

    def track(self, model: str = "bigram", contract: Mapping[str, Any] | None = None,
              prompt: Sequence[int] = DEFAULT_PROMPT, *, epoch: int = 1) -> TrackedSession:
        """A session the harness is about to open (nothing is sent yet)."""
        session_id = self.new_session_id()
        session = TrackedSession(session_id, epoch, dict(contract or self.contract(model)), model, list(prompt),
                                 self.cache_uri(f"log-{session_id.hex()}"))
        self.sessions.append(session)
        self.env.owns(self, session_id)
        return session

    async def open(self, session: TrackedSession, *, party: str = "router", deliberate: bool = False,
                   **overrides: Any) -> Answer:
        """``deliberate``: the case means the session-open to break ``sdcp.cddl`` (a contract it made invalid): it is
        sent unchecked (:mod:`~..self_check`)."""
        body = as_sent(self.opening(session, **overrides), deliberate)
        return await self.env.iut.send(party, "POST", "sessions", body)

    async def open_ok(self, model: str = "bigram", contract: Mapping[str, Any] | None = None,
                      prompt: Sequence[int] = DEFAULT_PROMPT) -> TrackedSession:
        """Open a session and check the session-state against d[0] (§6.1)."""
        session = self.track(model, contract, prompt)
        answer = await self.open(session)
        self.hold_to_claims(answer, message_features("POST", "sessions", self.opening(session)), "POST sessions")
        state = self.expect_ok(answer, SessionState, what="POST sessions")
        self.check_state(session, state, "POST sessions")
        return session

    def check_state(self, session: TrackedSession, state: SessionState, what: str) -> None:
        """§4.2: the session-state's committed length and digest are the harness's d[n], recomputed from tokens."""
        self.require(state.session == session.id, f"{what}: session-state names another session",
                     row="R-5.1-RESOURCES")
        self.require(state.committed == len(session.output) and state.digest == session.digest,
                     f"{what}: session-state (committed {state.committed}, digest {state.digest.hex()[:16]}…) "
                     f"does not match the harness's d[{len(session.output)}] = {session.digest.hex()[:16]}…",
                     row="R-4.2-CHAIN", expected=f"committed {len(session.output)}, digest {session.digest.hex()}",
                     actual=f"committed {state.committed}, digest {state.digest.hex()}")

    def assignment(self, session: TrackedSession, drafter: str = "drafter-1", **overrides: Any) -> dict[str, Any]:
        body = {"session": session.id, "epoch": session.epoch, "contract": session.contract,
                "verifier": self.env.config.base_uri, "drafter": self.env.party_uri(drafter),
                "prompt": session.prompt, "round": session.round, "committed": len(session.output),
                "digest": session.digest, "m_init": 4}
        body.update(overrides)
        return {key: value for key, value in body.items() if value is not None}

    async def assign(self, session: TrackedSession, drafter: str = "drafter-1", *, party: str = "router",
                     **overrides: Any) -> Answer:
        body = self.assignment(session, drafter, **overrides)
        return await self.env.iut.send(party, "PUT", f"sessions/{session.path_id}/drafter", body)

    async def assign_ok(self, session: TrackedSession, drafter: str = "drafter-1", **overrides: Any) -> None:
        state = self.expect_ok(await self.assign(session, drafter, **overrides), SessionState,
                               what="PUT sessions/{id}/drafter")
        self.check_state(session, state, "PUT sessions/{id}/drafter")

    async def policy(self, session: TrackedSession, from_round: int, sampling: Mapping[str, int], *,
                     party: str = "router") -> Answer:
        body = {"session": session.id, "from_round": from_round, "sampling": dict(sampling)}
        return await self.env.iut.send(party, "POST", f"sessions/{session.path_id}/policy", body)

    # ------------------------------------------------------------------ drafter role

    def proposal(self, session: TrackedSession, tokens: Sequence[int], drafter: str = "drafter-1",
                 **overrides: Any) -> dict[str, Any]:
        """The next proposal of the tracked session (round n+1 on d[n]) from ``drafter``."""
        tracked = {"session": session.id, "epoch": session.epoch, "round": session.round + 1,
                   "base": len(session.output), "base_digest": session.digest}
        return self.drafters.proposal(drafter, tracked, tokens, overrides)

    def publish_q(self, name: str, rows: np.ndarray) -> str:
        """Write draft rows (§5.2: M rows of V little-endian binary32) to the harness cache."""
        return self.put_object(name, np.ascontiguousarray(rows, dtype="<f4").tobytes())

    async def send_proposal(self, body: Mapping[str, Any] | bytes, *, party: str = "drafter-1",
                            held_s: float = 0.0) -> Answer:
        """``held_s``: how long the case may hold the round's commit-log append (:meth:`IutLink.send`)."""
        answer: Answer = await self.drafters.propose(body, party=party, held_s=held_s)
        return answer

    async def propose(self, session: TrackedSession, tokens: Sequence[int], *, drafter: str = "drafter-1",
                      party: str | None = None, held_s: float = 0.0, deliberate: bool = False,
                      **overrides: Any) -> Answer:
        """Send a proposal built from the tracked state (overrides replace members) and, on a verdict
        for the next round, check it and advance the tracked session. ``deliberate``: the case means the proposal
        to break ``sdcp.cddl`` (no tokens, say): it is sent unchecked (:mod:`~..self_check`)."""
        body = as_sent(self.proposal(session, tokens, drafter, **overrides), deliberate)
        answer = await self.send_proposal(body, party=party or drafter, held_s=held_s)
        if answer.ok and body.get("round") == session.round + 1:
            self.apply_verdict(session, self.expect_ok(answer, Verdict, what="POST proposals"))
        return answer

    async def propose_ok(self, session: TrackedSession, tokens: Sequence[int], **overrides: Any) -> Verdict:
        answer = await self.propose(session, tokens, **overrides)
        verdict = self.expect_ok(answer, Verdict, what="POST proposals")
        return verdict

    def apply_verdict(self, session: TrackedSession, verdict: Verdict) -> None:
        """§4.2 and §6.3 Commit, from first principles: the verdict must extend d[n] by its emitted tokens."""
        self.require(verdict.session == session.id and verdict.epoch == session.epoch,
                     "the verdict names another session or epoch", row="R-6.3-COMMIT")
        self.require(verdict.round == session.round + 1,
                     f"the verdict is for round {verdict.round}, not {session.round + 1}", row="R-6.3-COMMIT")
        expected_digest = extend_digest(session.digest, verdict.emitted)
        extended = len(session.output) + len(verdict.emitted)
        self.require(verdict.committed == extended, f"committed {verdict.committed} is not n + |emitted| = {extended}",
                     row="R-6.3-COMMIT")
        self.require(verdict.digest == expected_digest,
                     "the verdict's digest is not d[n] extended by its emitted tokens (§4.2)", row="R-4.2-CHAIN",
                     expected=expected_digest.hex(), actual=verdict.digest.hex())
        session.output.extend(verdict.emitted)
        session.round = verdict.round
        session.verdicts[verdict.round] = verdict

    async def output(self, session: TrackedSession, start: int = 0, *, party: str = "drafter-1") -> Answer:
        answer: Answer = await self.drafters.output(session.path_id, start, party=party)
        return answer

    async def output_ok(self, session: TrackedSession, start: int = 0, *, party: str = "drafter-1") -> Output:
        return self.expect_ok(await self.output(session, start, party=party), Output, what="GET output")

    # ------------------------------------------------------------------ oracle

    def greedy(self, session: TrackedSession, count: int) -> list[int]:
        """The target's greedy continuation of the tracked committed prefix (§6.4 rule 1)."""
        return greedy_continuation(session.model, session.context, count)


def _path_of(uri: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(uri).path


__all__ = ["DEFAULT_PROMPT", "TrackedSession", "VerifierContext", "VerifierParts"]
