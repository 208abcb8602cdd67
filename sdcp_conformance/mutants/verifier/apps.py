"""HTTP-layer mutants: bugs in the order of I/O (commit log, output) and in what is read off the wire."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from collections.abc import Sequence

import numpy as np

from sdcp_conformance.mutants.base import MutantApp, MutantSession
from sdcp_conformance.mutants.verifier import CATALOGUE
from sdcp_conformance.mutants.verifier.faulty import raw_member
from sdcp_conformance.protocol.chain import CONTRACT_DOMAIN, prefix_digest
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import SessionOpen, Status
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.verifier.app import _HttpError, _SessionSlot
from sdcp_conformance.reference.verifier.decisions import COMMIT_LOG_UNAVAILABLE_STATUS
from sdcp_conformance.reference.verifier.ports import AppendOutcome
from sdcp_conformance.reference.verifier.session import Committed, PendingCommit, Phase, Ticket, VerifierSession
from sdcp_conformance.transport.types import Request

_AFTER_APPEND = "only after that append succeeds does it send the verdict and make the tokens available as output."

log = logging.getLogger(__name__)

WRITE_BEHIND_S = 0.3
"""How long the write-behind mutant holds a commit record before appending it."""


@CATALOGUE.mutant("output-before-append", "fencing", "commits in memory (verdict stored, output visible) before the "
                  "append", "6.3", _AFTER_APPEND)
class OutputBeforeAppend(MutantApp):
    """Bug: the round is committed in memory (verdict stored, output visible) before the log append."""

    async def _commit(self, slot: _SessionSlot, pending: PendingCommit, ticket: Ticket | None) -> Committed:
        machine = slot.machine
        committed = machine.commit(pending)
        async with slot.changed:
            slot.changed.notify_all()
        try:
            outcome = await self.cache.append_record(slot.commit_log, pending.record.to_cbor(), machine.epoch)
        except Exception as exc:
            log.warning("append failed: %s", exc)
            outcome = AppendOutcome.FAILED
        if outcome is AppendOutcome.FENCED:
            machine.fence()
            raise ProtocolError(ProblemType.STALE_EPOCH, "the commit log is fenced by a newer epoch")
        if outcome is not AppendOutcome.APPENDED:
            raise _HttpError(COMMIT_LOG_UNAVAILABLE_STATUS, "the commit log could not be appended to")
        self._after_commit(slot, committed)
        return committed

    def _after_commit(self, slot: _SessionSlot, committed: Committed) -> None:
        for event in committed.events:
            self._spawn(self._post_event(event))
        if slot.machine.phase is Phase.SELF_DECODING and (slot.self_decoder is None or slot.self_decoder.done()):
            slot.self_decoder = asyncio.ensure_future(self._self_decode(slot))


@CATALOGUE.mutant("record-after-verdict", "commit-log", "write-behind log: the record is appended ~0.3 s after the "
                  "verdict", "6.3", _AFTER_APPEND)
class RecordAfterVerdict(OutputBeforeAppend):
    """Bug: a write-behind commit log — the verdict goes out first, the record is appended shortly after."""

    async def _commit(self, slot: _SessionSlot, pending: PendingCommit, ticket: Ticket | None) -> Committed:
        committed = slot.machine.commit(pending)
        async with slot.changed:
            slot.changed.notify_all()
        self._spawn(self._append_later(slot, pending))
        self._after_commit(slot, committed)
        return committed

    async def _append_later(self, slot: _SessionSlot, pending: PendingCommit) -> None:
        await asyncio.sleep(WRITE_BEHIND_S)  # the flush timer of a write-behind log
        machine = slot.machine
        try:
            outcome = await self.cache.append_record(slot.commit_log, pending.record.to_cbor(), machine.epoch)
        except Exception as exc:
            log.warning("write-behind append failed: %s", exc)
            return
        if outcome is AppendOutcome.FENCED:
            machine.fence()


@CATALOGUE.mutant("commit-on-q-unavailable", "q-preconditions", "rows that cannot be fetched are replaced by a "
                  "uniform draft distribution and the round commits", "6.3", "If it cannot obtain them, it rejects "
                  'the round with problem type "sdcp-q-unavailable" and commits nothing.')
class CommitOnQUnavailable(MutantApp):
    """Bug: rows that cannot be fetched are replaced by a uniform draft distribution and the round commits."""

    async def _q_rows(self, machine: VerifierSession, ticket: Ticket) -> object:
        try:
            return await super()._q_rows(machine, ticket)
        except ProtocolError as exc:
            if exc.problem is not ProblemType.Q_UNAVAILABLE:
                raise
        proposed = len(ticket.proposal.tokens)
        return np.full((proposed, machine.vocab_size), 1.0 / machine.vocab_size)


@CATALOGUE.mutant("contract-digest-raw-bytes", "contract", "the contract digest is taken over the received bytes, not "
                  "the deterministic re-encoding", "4.1, P1-MSG-1", "The contract digest is the SHA-256 of the "
                  "contract encoded with the core deterministic encoding of Section 4.2.1 of [RFC8949]")
class ContractDigestRawBytes(MutantApp):
    """Bug: the contract digest is taken over the contract's bytes as received, not re-encoded canonically."""

    def new_session(self, request: Request, opening: SessionOpen, prompt: Sequence[int], vocab_size: int,
                    committed: Sequence[int]) -> VerifierSession:
        machine = super().new_session(request, opening, prompt, vocab_size, committed)
        received = raw_member(request.body, "contract")
        if received is not None and isinstance(machine, MutantSession):
            digest = hashlib.sha256(CONTRACT_DOMAIN + received).digest()
            machine.rebase(digest, prefix_digest(digest, machine.prompt))
        return machine


@CATALOGUE.mutant("status-too-rare", "status", "reports status every 1.5 ttl_ms", "6.1",
                  "Each instance reports status at intervals shorter than its ttl_ms.")
class StatusTooRare(MutantApp):
    """Bug: reports status every 1.5 ttl_ms (the interval and the ttl confused), so its status expires between
    reports."""

    @property
    def status_interval_s(self) -> float:
        return 1.5 * self.config.status_ttl_ms / 1000


@CATALOGUE.mutant("status-as-drafter", "status", "reports status with role 1 (drafter)", "5.2",
                  "instance: tstr, role: 1 / 2, ; 1 drafter, 2 verifier")
class StatusAsDrafter(MutantApp):
    """Bug: the status report says role 1 (drafter), the status code copied from a drafter."""

    def status(self) -> Status:
        return dataclasses.replace(super().status(), role=1)


__all__ = [
    "WRITE_BEHIND_S",
    "CommitOnQUnavailable",
    "ContractDigestRawBytes",
    "OutputBeforeAppend",
    "RecordAfterVerdict",
    "StatusAsDrafter",
    "StatusTooRare",
]
