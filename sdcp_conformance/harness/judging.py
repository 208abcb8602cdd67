"""The judging half of every case's context, whatever the role under test (P1-JUDGE-1..2).

A case records findings against the rows of the requirement table
(:data:`sdcp_conformance.judge.TABLE`) and goes on with its remaining checks;
only :meth:`JudgedContext.fail` (or a failed :meth:`~JudgedContext.require`)
stops it, when nothing sensible is left to check. The runner turns the
findings into the case's verdict: the worst of them. Each role's context
(the verifier suite's :class:`~sdcp_conformance.harness.contexts.verifier.VerifierContext`,
the drafter and router suites' own) extends this class with the roles the
harness plays for it.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NoReturn

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.case import Case, CaseIncomplete, CaseSkipped, CaseStopped
from sdcp_conformance.harness.refused_clients import ROW as REFUSED_ROW
from sdcp_conformance.harness.refused_clients import TRANSPORT_ROWS, describe_refused
from sdcp_conformance.harness.transcript import CaseTranscript, DeadlineMiss
from sdcp_conformance.judge import TABLE, Answered, Finding, deviation, judge_refusal
from sdcp_conformance.judge import Verdict as Severity
from sdcp_conformance.transport.listeners import PartyServer


def session_id_for(rng: random.Random, nonce: bytes) -> bytes:
    """A 16-byte session ID: drawn from the case's seeded ``rng`` (so the draws after it stay reproducible),
    XORed with the environment's run nonce. An embedded IUT starts empty each run, so its nonce is zero and a
    seed repeats the IDs; a target IUT lives across runs, and a rerun with the same seed must not meet the
    sessions the last run opened (D-ID-1)."""
    drawn = rng.randbytes(16)
    return bytes(a ^ b for a, b in zip(drawn, nonce.ljust(16, b"\0"), strict=True))


def run_nonce(embedded: bool) -> bytes:
    """Zero for an embedded IUT (fresh each run), random for a target (D-ID-1)."""
    return bytes(16) if embedded else secrets.token_bytes(16)


class JudgedContext:
    """A case's transcript, random source, notes and findings, and the judgement methods."""

    def __init__(self, case: Case, seed: int, run: str = "main") -> None:
        self.case = case
        self.case_id = case.id
        self.transcript = CaseTranscript()
        self.rng = random.Random(f"{seed}:{case.id}:{run}")
        self.notes: list[str] = []
        self.findings: list[Finding] = []
        self.attachments: dict[str, Any] = {}
        """Structured evidence by name (JSON-ready), copied into the result: the HTML report plots it."""
        self.started_at = time.monotonic()
        self.timed: set[int] = set()
        """Indices in :attr:`findings` of the findings a missed deadline caused (P1-JUDGE-5): the runner runs
        such a case again alone, and judges them only if the deadline is missed again, as "too slow"."""

    def played_servers(self) -> Sequence[PartyServer]:
        """The servers of the parties the harness plays for the IUT (its verifiers, cache, router, drafters)."""
        return ()

    def attributed(self, row: str, message: str) -> tuple[str, str, str]:
        """(row, message, actual) of a finding that stops the case: D-JUDGE-REFUSED-CLIENT puts it on
        R-5.1-MTLS-CLIENT when the harness's servers refused the IUT's connections since the case began."""
        refused = "" if row in TRANSPORT_ROWS else describe_refused(self.played_servers(), self.started_at)
        if not refused:
            return row, message, ""
        return REFUSED_ROW, f"{refused}; then: {message}", refused

    # ------------------------------------------------------------------ judgements (P1-JUDGE-1..2)

    def record(self, finding: Finding, *, late: bool = False) -> Finding:
        """Keep ``finding``; its row must be one the case declares, or an ambient row.

        ``late``: the finding is about something that did not happen in time. So is any finding whose words
        quote a request of this case that missed its deadline (an answer's ``describe()`` carries them):
        P1-JUDGE-5 judges those only after a second miss (:attr:`timed`)."""
        if finding.row:
            row = TABLE[finding.row]
            if not row.ambient and finding.row not in self.case.rows:
                raise InvalidArgument(f"harness error: case {self.case.id} judges row {finding.row}, which it does "
                                      f"not declare (it declares {list(self.case.rows)})")
        evidence = tuple(entry.sequence for entry in self.transcript.entries()[-3:])
        kept = replace(finding, evidence=evidence)
        if late or any(miss.what in finding.message for miss in self.transcript.deadline_misses):
            self.timed.add(len(self.findings))
        self.findings.append(kept)
        return kept

    def missed_deadline(self, what: str, waited_s: float, stage: str = "no message from the IUT") -> None:
        """The IUT did not do ``what`` within ``waited_s``: evidence of time, not of a deviation (P1-JUDGE-5);
        a finding the case then records about it is marked ``late``."""
        self.transcript.missed_deadline(DeadlineMiss(what, stage, waited_s))

    def deviate(self, row: str, message: str, *, expected: Sequence[str] = (), actual: str = "",
                late: bool = False) -> Finding:
        """Record a deviation from ``row`` at the severity its level gives, and go on (P1-JUDGE-2)."""
        return self.record(deviation(TABLE[row], message, expected=expected, actual=actual), late=late)

    def check(self, condition: bool, message: str, *, row: str | None = None, expected: str = "",
              actual: str = "") -> bool:
        """Judge ``condition`` against ``row`` (default: the case's own sentence); record and go on if it fails."""
        if not condition:
            self.deviate(row or self.case.primary_row, message, expected=[expected] if expected else [],
                         actual=actual)
        return condition

    def require(self, condition: bool, message: str, *, row: str | None = None, expected: str = "",
                actual: str = "") -> None:
        """Like :meth:`check`, but a failure leaves nothing sensible to check next: the case stops."""
        if not condition:
            self.fail(message, row=row, expected=[expected] if expected else [], actual=actual)

    def fail(self, message: str, *, row: str | None = None, expected: Sequence[str] = (), actual: str = "") -> NoReturn:
        """Record a deviation from ``row`` (default: the case's own sentence) and stop the case."""
        judged_row, judged_message, refused = self.attributed(row or self.case.primary_row, message)
        if refused:
            expected, actual = ["HTTP/2 over TLS 1.3 with the IUT's client certificate (§5.1)"], refused
        raise CaseStopped(self.deviate(judged_row, judged_message, expected=expected, actual=actual))

    def skip(self, reason: str) -> NoReturn:
        raise CaseSkipped(reason)

    def incomplete(self, cause: str) -> NoReturn:
        """A control step failed for ``cause``, outside what the case is about (P1-JUDGE-4): the case ends
        INCOMPLETE, naming it, and says nothing about its subject."""
        raise CaseIncomplete(cause)

    def informational(self, message: str, *, row: str = "") -> Finding:
        """Record an observation (INFORMATIONAL): a MAY, a RECOMMENDED behaviour, or what could not be exercised."""
        source = TABLE[row].source if row else ""
        return self.record(Finding(row, Severity.INFORMATIONAL, message, source=source))

    def note(self, text: str) -> None:
        self.notes.append(text)

    def attach(self, name: str, data: Any) -> None:
        """Keep JSON-ready structured evidence under ``name`` (the rule-2 e-process trace, say) for the reports."""
        self.attachments[name] = data

    def expect_refusal(self, answer: Answered, *rows: str, what: str = "") -> bool:
        """The request had to be refused as ``rows`` say (P1-JUDGE-1); record any deviation and go on.

        Returns whether the answer was exactly one of the refusals the rows allow.
        """
        finding = judge_refusal(answer, [TABLE[row] for row in rows], what or "the request")
        if getattr(answer, "problem_media_type_ok", None) is False:
            self.deviate("P1-ERR-1", f"{what or 'the request'}: the problem body is labelled "
                         f"{getattr(answer, 'content_type', None)!r}, not application/problem+json or +cbor",
                         expected=["application/problem+json"])
        if getattr(answer, "problem_type_uri_ok", None) is False:  # then the type names an SDCP problem
            problem: Any = getattr(answer, "problem", None)
            self.deviate("P1-ERR-1", f"{what or 'the request'}: the problem type is {problem.type_uri!r}, not the URN "
                         "P1-ERR-1 gives", expected=[problem.problem_type.uri], actual=problem.type_uri)
        if finding is None:
            return True
        self.record(finding)
        return False




__all__ = ["JudgedContext", "run_nonce", "session_id_for"]
