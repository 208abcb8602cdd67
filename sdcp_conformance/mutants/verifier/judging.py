"""Mutants that test the judge itself: refusals of the wrong type, a refusal that commits anyway.

Each is a realistic bug a verifier vendor ships: one catch-all error handler
that answers every validation failure with 400 ``sdcp-bad-message`` although
the draft names another status and type (P1-JUDGE-1 makes that FAILED, not
NON-STRICT), and a limit check that runs only after the round was verified
and committed, so the proposal is refused with the right type but the round
is in the commit log and the output anyway (P1-JUDGE-2: "a refusal that
commits anyway is FAILED").
"""

from __future__ import annotations

from collections.abc import Sequence

from sdcp_conformance.mutants.base import MutantApp, MutantSession, VerifierMutant
from sdcp_conformance.mutants.verifier import CATALOGUE
from sdcp_conformance.mutants.verifier.sessions import AUTH, BASE, FENCE, Q_ZERO
from sdcp_conformance.protocol.errors import ProtocolError
from sdcp_conformance.protocol.messages import Proposal, SessionOpen
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.reference.verifier.session import Committed, PendingCommit
from sdcp_conformance.transport.problem import parse_problem, problem_response
from sdcp_conformance.transport.types import Request, Response


def answers_bad_message_for(problem: ProblemType) -> type[MutantApp]:
    """An app whose error handler turns ``problem`` into 400 sdcp-bad-message (nothing else changes)."""

    class BadMessageFor(MutantApp):
        async def __call__(self, request: Request) -> Response:
            response = await super().__call__(request)
            if response.status != problem.status:
                return response
            parsed = parse_problem(response.status, response.header("content-type"), response.body)
            if parsed is None or parsed.problem_type is not problem:
                return response
            # Bug: every refusal goes through one "invalid request" branch.
            return problem_response(ProtocolError(ProblemType.BAD_MESSAGE, f"invalid request ({parsed.detail})"))

    BadMessageFor.__name__ = BadMessageFor.__qualname__ = f"BadMessageFor{problem.name.title().replace('_', '')}"
    return BadMessageFor


CATALOGUE.add(*(VerifierMutant(f"{problem.suffix.removeprefix('sdcp-')}-as-bad-message", "judging",
                               f"{problem.status} {problem.suffix} is answered 400 sdcp-bad-message (one catch-all "
                               "error branch)", section, quote, app=answers_bad_message_for(problem))
                for problem, section, quote in (
                    (ProblemType.STALE_EPOCH, "6.3", FENCE),
                    (ProblemType.STALE_BASE, "6.3", BASE),
                    (ProblemType.NOT_ASSIGNED, "6.3", AUTH),
                    (ProblemType.LIMIT, "6.2, Table 2", "sdcp-limit 422 Proposal violates m_cap or m_max"),
                    (ProblemType.BAD_CONTRACT, "4.1, Table 2", 'A contract that contains a key not defined by this '
                     'document MUST be rejected with problem type "sdcp-bad-contract"'),
                    (ProblemType.BAD_PROPOSAL, "6.4", Q_ZERO))))


@CATALOGUE.mutant("limit-refused-after-commit", "judging", "an over-limit proposal gets 422 sdcp-limit, but only "
                  "after its round was verified and committed", "6.2, P1-CTL-1", "A proposal over the limit gets 422 "
                  "`sdcp-limit` and changes nothing.")
class LimitRefusedAfterCommit(MutantSession):
    """Bug: M is checked against the limit only once the round was verified and committed.

    The proposal gets 422 sdcp-limit, the right answer, but its round is
    already in the commit log and the output: the refusal "commits anyway".
    """

    def __init__(self, opening: SessionOpen, prompt: Sequence[int], *, vocab_size: int,
                 committed_output: Sequence[int] = ()) -> None:
        super().__init__(opening, prompt, vocab_size=vocab_size, committed_output=committed_output)
        self._over_limit: set[int] = set()

    def _check_limits(self, proposal: Proposal) -> None:
        limit = min(self.contract.m_max, self.control.limit())
        if len(proposal.tokens) > limit:
            self._over_limit.add(proposal.round)
            return
        super()._check_limits(proposal)

    def commit(self, pending: PendingCommit) -> Committed:
        committed = super().commit(pending)
        if pending.verdict is not None and pending.verdict.round in self._over_limit:
            self._over_limit.discard(pending.verdict.round)
            raise ProtocolError(ProblemType.LIMIT, f"M = {pending.proposed} exceeds the limit")
        return committed


__all__ = ["LimitRefusedAfterCommit", "answers_bad_message_for"]
