"""One judge for every verdict: the requirement table and the rules that turn observations into findings.

``requirements`` (rows) ──► ``judge_refusal`` / ``judge_condition`` ──► :class:`Finding`.
Suites, the stateful fuzzer and the message fuzzer all ask this package; the
verdict of a case is the worst of its findings (P1-JUDGE-2).
"""

from sdcp_conformance.judge.findings import Answered, Finding, deviation, judge_condition, judge_refusal
from sdcp_conformance.judge.levels import SEVERITY_ORDER, Level, Verdict, severity_of, worst
from sdcp_conformance.judge.requirements import TABLE
from sdcp_conformance.judge.rows import ROLES, Refusal, Row, Table, refusal

__all__ = [
    "ROLES",
    "SEVERITY_ORDER",
    "TABLE",
    "Answered",
    "Finding",
    "Level",
    "Refusal",
    "Row",
    "Table",
    "Verdict",
    "deviation",
    "judge_condition",
    "judge_refusal",
    "refusal",
    "severity_of",
    "worst",
]
