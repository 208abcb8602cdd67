"""Bugs planted in the reference drafter's loop and HTTP layer (subclasses of ``DrafterApp``)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import numpy as np

from sdcp_conformance.mutants.drafter import CATALOGUE
from sdcp_conformance.mutants.drafter.sessions import EXACT, IgnoresDraftersListSession, StaleContextSession
from sdcp_conformance.protocol.chain import extend_digest
from sdcp_conformance.protocol.codec import decode
from sdcp_conformance.protocol.messages import Assignment, Contract, Proposal
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import PURPOSE_ACCEPT, verify_uniform
from sdcp_conformance.reference.drafter.app import DrafterApp, _Slot
from sdcp_conformance.reference.drafter.ports import Problem, ProposalResult, TransportFailure

_ARTIFACTS = ("It writes the draft artifacts the verifier may need to the MLC and holds leases on them until it "
              "receives the verdict of the round.")

_CONTRACT_KEYS = frozenset(field.name for field in dataclasses.fields(Contract))


@CATALOGUE.mutant("drf-pipelined-proposals", "outstanding", "sends the next proposal, assuming full acceptance, "
                  "before the verdict of the current one", "6.2", "A drafter MUST NOT have more than one outstanding "
                  "proposal per session.")
class PipelinedProposals(DrafterApp):
    """Sends the next proposal, drafted as if every token were accepted, before the verdict of the current one."""

    _side: set[asyncio.Task[Any]]

    async def _exchange(self, verifier: str, body: bytes) -> ProposalResult:
        proposal = Proposal.from_cbor(body)
        slot = self.sessions.get(proposal.session)
        if slot is not None:
            machine = slot.machine
            context = (*machine.context, *proposal.tokens)
            tokens, _ = slot.model.draft(machine.session, context, len(proposal.tokens), machine.sampling, 1,
                                         slot.rng)
            ahead = proposal.replace(round=proposal.round + 1, base=proposal.base + len(proposal.tokens),
                                     base_digest=extend_digest(proposal.base_digest, proposal.tokens),
                                     tokens=tokens, q_rows=None)
            exchange = asyncio.create_task(super()._exchange(verifier, body))
            await asyncio.sleep(0.01)  # the speculative proposal is ready while the first one is being verified
            side = asyncio.create_task(self.verifier.post_proposal(verifier, ahead.to_cbor()))
            self._side = getattr(self, "_side", set())
            self._side.add(side)
            side.add_done_callback(self._side.discard)
            return await exchange
        return await super()._exchange(verifier, body)


@CATALOGUE.mutant("drf-retry-redrafts", "lost-verdicts", "a lost verdict makes it draft again and send a different "
                  "proposal for the round instead of retrying", "6.9", "so a drafter retries a proposal whose verdict "
                  "it did not receive.")
class RetryRedrafts(DrafterApp):
    """A lost verdict is treated like a round without one: the drafter drafts again and sends a new proposal."""

    async def _exchange(self, verifier: str, body: bytes) -> ProposalResult:
        result = await self._attempt(self.verifier.post_proposal(verifier, body), self.config.proposal_timeout_s)
        if isinstance(result, TransportFailure):
            return Problem(ProblemType.Q_UNAVAILABLE, 409, None, f"treated as no verdict: {result.detail}")
        return result


@CATALOGUE.mutant("drf-retries-4xx", "refusals", "retries refused proposals like lost ones", "P1-DRF-5, 5.1",
                  "a 4xx is final.")
class Retries4xx(DrafterApp):
    """A refusal is retried like a lost verdict (only stale-base and q-unavailable are understood)."""

    async def _exchange(self, verifier: str, body: bytes) -> ProposalResult:
        for attempt in range(1, self.config.max_attempts + 1):
            result = await super()._exchange(verifier, body)
            retried = isinstance(result, Problem) and result.type not in (ProblemType.STALE_BASE,
                                                                          ProblemType.Q_UNAVAILABLE)
            if not retried or attempt == self.config.max_attempts:
                return result
            await self._sleep(self._backoff(attempt))
        return TransportFailure("unreachable")


@CATALOGUE.mutant("drf-q-rows-deleted-early", "q-rows", "deletes its q_rows as soon as the proposal is sent", "6.2",
                  _ARTIFACTS)
class QRowsDeletedEarly(DrafterApp):
    """Releases its q_rows as soon as the proposal is sent, before the verdict arrives."""

    async def _exchange(self, verifier: str, body: bytes) -> ProposalResult:
        uri = Proposal.from_cbor(body).q_rows
        if uri is not None:
            await self._delete(uri)
        return await super()._exchange(verifier, body)


@CATALOGUE.mutant("drf-short-lease", "q-rows", "leases its q_rows for 300 ms", "6.2, P1-MLC-3", _ARTIFACTS)
class ShortLease(DrafterApp):
    """Leases its q_rows for 300 ms, much less than a verdict can take."""

    def lease_ms(self) -> int:
        return 300


@CATALOGUE.mutant("drf-no-delete", "q-rows", "never deletes its q_rows after the verdict", "P1-DRF-8",
                  "Leases on `q_rows` last at least the drafter's proposal timeout, and the drafter deletes the "
                  "objects after the verdict.", profile_only=True)
class NoDelete(DrafterApp):
    """Never deletes its q_rows: they stay in the MLC until their lease ends."""

    async def _delete(self, uri: str) -> None:
        return None


@CATALOGUE.mutant("drf-accepts-lower-epoch", "assignments", "installs an assignment with a lower epoch", "P1-DRF-7",
                  "An assignment with a lower epoch than the one a drafter holds gets 409 `sdcp-stale-epoch`",
                  profile_only=True)
class AcceptsLowerEpoch(DrafterApp):
    """Installs any assignment, whatever its epoch."""

    def _check_epoch(self, assignment: Assignment) -> None:
        return None


@CATALOGUE.mutant("drf-replaced-keeps-stale-draft", "assignments", "a replacing assignment's session drafts from a "
                  "context still holding the abandoned proposal: invisible with a bigram draft model", "P1-DRF-7",
                  "an equal or higher epoch replaces the current assignment, abandoning any outstanding proposal "
                  "first.", profile_only=True, session=StaleContextSession)
class ReplacedKeepsStaleDraft(DrafterApp):
    """A replacing assignment (P1-DRF-7) starts a session whose draft context still holds the abandoned proposal,
    before the committed tokens the assignment brings (with :class:`~.sessions.StaleContextSession`)."""

    async def _install(self, assignment: Assignment, prompt: list[int], committed: list[int] | None) -> None:
        held = self.sessions.get(assignment.session)
        outstanding = held.machine.outstanding if held is not None else None
        await super()._install(assignment, prompt, committed)
        machine = self.sessions[assignment.session].machine
        if held is not None and outstanding is not None and isinstance(machine, StaleContextSession):
            machine.stale = (len(held.machine.output), tuple(outstanding.tokens))


@CATALOGUE.mutant("drf-accepts-any-router", "assignments", "accepts assignments from any authenticated client",
                  "P1-DRF-1", "it accepts `POST assignments` only from its routers (else 403 `sdcp-not-assigned`).",
                  profile_only=True)
class AcceptsAnyRouter(DrafterApp):
    """Accepts assignments from any authenticated client."""

    def authorized(self, peer: str | None) -> bool:
        return peer is not None


@CATALOGUE.mutant("drf-ignores-drafters-list", "assignments", "never looks at the contract's drafters list", "P1-DRF-3",
                  "A drafter refuses (422 `sdcp-bad-contract`) an assignment whose contract lists `drafters` without "
                  "its model's digest or names another tokenizer.", profile_only=True,
                  session=IgnoresDraftersListSession)
class IgnoresDraftersList(DrafterApp):
    """Never looks at the contract's drafters list."""

    def validate_assignment(self, assignment: Assignment) -> None:
        super().validate_assignment(assignment.replace(contract=assignment.contract.replace(drafters=None)))


@CATALOGUE.mutant("drf-drops-unknown-contract-keys", "assignments", "drops contract keys it does not know instead of "
                  "refusing the assignment", "4.1", "A contract that contains a key not defined by this document MUST "
                  'be rejected with problem type "sdcp-bad-contract"')
class IgnoresUnknownContractKey(DrafterApp):
    """Drops contract keys it does not know instead of refusing the assignment (§4.1)."""

    def parse_assignment(self, body: bytes) -> Assignment:
        obj = decode(body)
        if isinstance(obj, dict) and isinstance(obj.get("contract"), dict):
            obj["contract"] = {key: value for key, value in obj["contract"].items() if key in _CONTRACT_KEYS}
        return Assignment.from_obj(obj)


@CATALOGUE.mutant("drf-status-too-rare", "status", "reports status every 1.5 ttl_ms", "6.1",
                  "Each instance reports status at intervals shorter than its ttl_ms.")
class StatusTooRare(DrafterApp):
    """Reports status every 1.5 ttl_ms, so its status expires between reports."""

    def status_interval_s(self) -> float:
        return 1.5 * self.config.status_ttl_ms / 1000


@CATALOGUE.mutant("drf-accept-milli-frozen", "status", "accept_milli keeps the first a/M it saw", "P1-DRF-8",
                  "`accept_milli` in status is the EWMA of a/M.", profile_only=True)
class AcceptMilliFrozen(DrafterApp):
    """accept_milli keeps the first a/M it saw, whatever the verdicts say afterwards."""

    def _observe_accept(self, accepted: int, proposed: int) -> None:
        if self.accept is None:
            super()._observe_accept(accepted, proposed)


@CATALOGUE.mutant("drf-gives-up-quickly", "lost-verdicts", "retries a lost verdict max_attempts times (about 0.35 s) "
                  "and abandons the session", "P1-DRF-5", "A lost verdict (transport error, timeout, 5xx, 429) is "
                  "retried with the identical body, with backoff, for at least 30 s or until a new assignment for the "
                  "session arrives", profile_only=True)
class GivesUpQuickly(DrafterApp):
    """The reference before the drafter suite: a lost verdict is retried max_attempts times, about 0.35 s in all."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(dataclasses.replace(config, retry_window_s=0.0), *args, **kwargs)


@CATALOGUE.mutant("drf-reused-uniforms", "sampling", "draws with the same uniforms every round", "5.2", EXACT)
class ReusedUniforms(DrafterApp):
    """Seeds a fresh generator with the same seed for every proposal: the same uniforms every round."""

    def uniforms(self, slot: _Slot) -> np.random.Generator:
        return np.random.default_rng(2026)


class _HmacSource:
    """§6.4's HMAC uniforms for positions 1, 2, … of one round, as a generator's ``random()``."""

    def __init__(self, seed: int, session: bytes, round_: int, fallback: np.random.Generator) -> None:
        self._seed, self._session, self._round, self._i = seed, session, round_, 0
        self._fallback = fallback

    def random(self) -> float:
        self._i += 1
        return verify_uniform(self._seed, self._session, self._round, self._i, PURPOSE_ACCEPT)


@CATALOGUE.mutant("drf-hmac-uniforms", "sampling", "draws with §6.4's HMAC uniforms when the contract has a seed",
                  "6.4", "Drafters MUST NOT use this derivation for their own sampling.")
class HmacUniforms(DrafterApp):
    """With a seed in the sampling profile, draws its tokens with §6.4's HMAC uniforms (the verifier's)."""

    def uniforms(self, slot: _Slot) -> np.random.Generator:
        machine = slot.machine
        seed = (machine.sampling or {}).get("seed")
        if seed is None:
            return slot.rng
        source: np.random.Generator = _HmacSource(seed, machine.session, machine.round + 1, slot.rng)  # type: ignore[assignment]
        return source  # duck-typed: LogitsDraftModel only calls random()


__all__ = [
    "AcceptMilliFrozen",
    "AcceptsAnyRouter",
    "AcceptsLowerEpoch",
    "GivesUpQuickly",
    "HmacUniforms",
    "IgnoresDraftersList",
    "IgnoresUnknownContractKey",
    "NoDelete",
    "PipelinedProposals",
    "QRowsDeletedEarly",
    "ReplacedKeepsStaleDraft",
    "Retries4xx",
    "RetryRedrafts",
    "ReusedUniforms",
    "ShortLease",
    "StatusTooRare",
]
