"""The judge turns an answer plus a requirement row into the finding P1-JUDGE-1..3 say, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sdcp_conformance.judge import TABLE, Level, Row, Verdict, judge_condition, judge_refusal, refusal, worst
from sdcp_conformance.protocol.problems import ProblemType


@dataclass(frozen=True)
class FakeAnswer:
    status: int | None
    problem_type: ProblemType | None = None

    def describe(self) -> str:
        return f"{self.status} {self.problem_type.suffix if self.problem_type else ''}".strip()


DRAFT_ROW = TABLE["R-6.3-FENCING"]  # MUST, 409 sdcp-stale-epoch named by the draft
PROFILE_ROW = TABLE["P1-SES-1/EMPTY-PROMPT"]  # PROFILE, 400 sdcp-bad-message
MIXED_ROW = TABLE["R-6.2-EMPTY"]  # MUST refusal, type named by the profile only


def _severity(answer: FakeAnswer, *rows: Row) -> Verdict | None:
    finding = judge_refusal(answer, list(rows), "the request")
    return None if finding is None else finding.severity


def test_the_named_status_and_type_pass() -> None:
    assert _severity(FakeAnswer(409, ProblemType.STALE_EPOCH), DRAFT_ROW) is None


@pytest.mark.parametrize("answer", [
    FakeAnswer(400, ProblemType.BAD_MESSAGE),  # another type (the catch-all)
    FakeAnswer(409, ProblemType.STALE_BASE),  # the right status, another type
    FakeAnswer(409, None),  # the right status, no problem document
    FakeAnswer(422, ProblemType.STALE_EPOCH),  # the right type, another status
])
def test_a_draft_named_refusal_of_another_kind_is_failed(answer: FakeAnswer) -> None:
    assert _severity(answer, DRAFT_ROW) is Verdict.FAILED


@pytest.mark.parametrize("answer", [FakeAnswer(200), FakeAnswer(500), FakeAnswer(503), FakeAnswer(None)])
def test_acceptance_a_server_error_or_no_answer_is_never_a_refusal(answer: FakeAnswer) -> None:
    """P1-JUDGE-3: "A timeout is never a refusal"; a 2xx or 5xx is judged at the row's own level."""
    assert _severity(answer, DRAFT_ROW) is Verdict.FAILED
    assert _severity(answer, PROFILE_ROW) is Verdict.NON_STRICT


def test_a_profile_only_refusal_of_another_kind_is_non_strict() -> None:
    assert _severity(FakeAnswer(422, ProblemType.BAD_CONTRACT), PROFILE_ROW) is Verdict.NON_STRICT


def test_a_refusal_the_draft_demands_but_only_the_profile_types_splits_the_severity() -> None:
    assert _severity(FakeAnswer(200), MIXED_ROW) is Verdict.FAILED
    assert _severity(FakeAnswer(409, ProblemType.STALE_BASE), MIXED_ROW) is Verdict.NON_STRICT
    assert _severity(FakeAnswer(422, ProblemType.LIMIT), MIXED_ROW) is None  # an alternative the row allows


def test_several_rows_pass_on_any_and_deviate_at_the_strictest() -> None:
    closed = TABLE["P1-CTL-3/CLOSED"]
    assert _severity(FakeAnswer(410, ProblemType.SESSION_CLOSED), DRAFT_ROW, closed) is None
    assert _severity(FakeAnswer(409, ProblemType.STALE_EPOCH), DRAFT_ROW, closed) is None
    assert _severity(FakeAnswer(400, ProblemType.BAD_MESSAGE), DRAFT_ROW, closed) is Verdict.FAILED
    assert _severity(FakeAnswer(422, ProblemType.BAD_CONTRACT), closed, PROFILE_ROW) is Verdict.NON_STRICT


def test_a_finding_names_its_row_and_says_what_was_expected() -> None:
    finding = judge_refusal(FakeAnswer(400, ProblemType.BAD_MESSAGE), [DRAFT_ROW], "a stale epoch")
    assert finding is not None and finding.row == "R-6.3-FENCING" and finding.source == DRAFT_ROW.source
    assert finding.expected == ("409 sdcp-stale-epoch",) and "a stale epoch" in finding.message


@pytest.mark.parametrize(("level", "severity"), [
    (Level.MUST, Verdict.FAILED), (Level.MUST_NOT, Verdict.FAILED), (Level.REQUIRED, Verdict.FAILED),
    (Level.SHOULD, Verdict.NON_STRICT), (Level.PROFILE, Verdict.NON_STRICT),
    (Level.RECOMMENDED, Verdict.INFORMATIONAL), (Level.MAY, Verdict.INFORMATIONAL),
])
def test_a_failed_condition_takes_its_rows_level(level: Level, severity: Verdict) -> None:
    row = Row("R-9.9-TEST", "9.9", "text", level, "verifier")
    assert judge_condition(True, row, "held") is None
    finding = judge_condition(False, row, "did not hold")
    assert finding is not None and finding.severity is severity


def test_a_case_verdict_is_the_worst_finding() -> None:
    assert worst([]) is Verdict.PASSED
    assert worst([Verdict.INFORMATIONAL, Verdict.NON_STRICT]) is Verdict.NON_STRICT
    assert worst([Verdict.NON_STRICT, Verdict.FAILED, Verdict.INFORMATIONAL]) is Verdict.FAILED


def test_a_refusal_without_any_refusal_row_is_a_harness_bug() -> None:
    with pytest.raises(ValueError, match="describes a refusal"):
        judge_refusal(FakeAnswer(409), [TABLE["R-6.3-IDEMPOTENCY"]], "x")


def test_refusal_helper_uses_the_table_2_status() -> None:
    made = refusal(ProblemType.LIMIT, ProblemType.BAD_MESSAGE)
    assert made.accepts(422, ProblemType.LIMIT) and made.accepts(400, ProblemType.BAD_MESSAGE)
    assert not made.accepts(400, ProblemType.LIMIT)
