"""Rule2Judge files an outcome that §4.1's steps in another order explain on §4.1's sentence, and only then.

Hand-made verdicts and expectations (a two-token proposal, outcomes written out), against a recording stand-in
for the case context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from sdcp_conformance.oracle.rule2 import Rule2Expectation
from sdcp_conformance.suites.verifier.seeded_rule2 import ORDER_ROW, DraftedProposal, Rule2Judge

PROPOSAL = DraftedProposal([7, 9], [[0.5] * 2, [0.5] * 2])
SUPPORT = [1.0] * 16
RIGHT = Rule2Expectation(1, [7, 3])


@dataclass
class _Ctx:
    findings: list[tuple[str, str]] = field(default_factory=list)

    def check(self, condition: bool, message: str, *, row: str | None = None, **_: Any) -> bool:
        if not condition:
            self.findings.append((row or "R-6.4-HMAC", message))
        return condition

    def deviate(self, row: str, message: str, **_: Any) -> None:
        self.findings.append((row, message))


def _verdict(round_number: int, accepted: int, emitted: list[int]) -> Any:
    return SimpleNamespace(round=round_number, accepted=accepted, emitted=emitted)


def _judge() -> tuple[Rule2Judge, _Ctx]:
    ctx = _Ctx()
    return Rule2Judge(ctx), ctx  # type: ignore[arg-type]


def test_decisions_another_order_gives_exactly_are_judged_on_the_sampling_sentence() -> None:
    judge, ctx = _judge()
    orders = {"temperature-after-top-p": Rule2Expectation(2, [7, 9, 4]), "top-p-first": Rule2Expectation(0, [5])}
    judge.judge(_verdict(1, 2, [7, 9, 4]), PROPOSAL, RIGHT, SUPPORT, orders)
    judge.finish()
    assert [row for row, _ in ctx.findings] == [ORDER_ROW]
    assert "temperature-after-top-p" in ctx.findings[0][1] and "top-p-first" not in ctx.findings[0][1]


def test_decisions_no_order_gives_stay_on_the_hmac_sentence() -> None:
    judge, ctx = _judge()
    orders = {"temperature-after-top-p": Rule2Expectation(2, [7, 9, 4])}
    judge.judge(_verdict(1, 2, [7, 9, 5]), PROPOSAL, RIGHT, SUPPORT, orders)
    judge.judge(_verdict(2, 0, [6]), PROPOSAL, RIGHT, SUPPORT, None)
    assert [row for row, _ in ctx.findings] == ["R-6.4-HMAC", "R-6.4-HMAC"]


def test_one_drawn_token_an_order_explains_stays_a_profile_deviation_with_the_order_named() -> None:
    judge, ctx = _judge()
    judge.judge(_verdict(1, 1, [7, 8]), PROPOSAL, RIGHT, SUPPORT, {"top-p-first": Rule2Expectation(1, [7, 8])})
    judge.finish()
    assert [row for row, _ in ctx.findings] == ["P1-SAMP-2/DRAW"]
    assert "top-p-first" in ctx.findings[0][1]


def test_drawn_tokens_one_order_explains_twice_are_judged_on_the_sampling_sentence() -> None:
    judge, ctx = _judge()
    judge.judge(_verdict(1, 1, [7, 8]), PROPOSAL, RIGHT, SUPPORT,
                {"top-p-first": Rule2Expectation(1, [7, 8]), "top-p-before-top-k": Rule2Expectation(1, [7, 8])})
    judge.judge(_verdict(2, 1, [7, 11]), PROPOSAL, RIGHT, SUPPORT, {"top-p-first": Rule2Expectation(1, [7, 11])})
    judge.finish()
    assert [row for row, _ in ctx.findings] == [ORDER_ROW]
    assert "top-p-first" in ctx.findings[0][1] and "top-p-before-top-k" not in ctx.findings[0][1]


def test_drawn_tokens_two_different_orders_explain_stay_a_profile_deviation() -> None:
    judge, ctx = _judge()
    judge.judge(_verdict(1, 1, [7, 8]), PROPOSAL, RIGHT, SUPPORT, {"top-p-first": Rule2Expectation(1, [7, 8])})
    judge.judge(_verdict(2, 1, [7, 11]), PROPOSAL, RIGHT, SUPPORT,
                {"top-p-before-top-k": Rule2Expectation(1, [7, 11])})
    judge.finish()
    assert [row for row, _ in ctx.findings] == ["P1-SAMP-2/DRAW"]


def test_a_drawn_token_of_the_order_that_explained_decisions_is_judged_on_the_sampling_sentence() -> None:
    judge, ctx = _judge()
    judge.judge(_verdict(1, 2, [7, 9, 4]), PROPOSAL, RIGHT, SUPPORT,
                {"temperature-after-top-p": Rule2Expectation(2, [7, 9, 4])})
    judge.judge(_verdict(2, 1, [7, 8]), PROPOSAL, RIGHT, SUPPORT,
                {"temperature-after-top-p": Rule2Expectation(1, [7, 8])})
    judge.finish()
    assert [row for row, _ in ctx.findings] == [ORDER_ROW, ORDER_ROW]


def test_a_drawn_token_outside_the_support_that_an_order_gives_is_judged_on_the_sampling_sentence() -> None:
    judge, ctx = _judge()
    support = [1.0] * 16
    support[8] = 0.0
    judge.judge(_verdict(1, 1, [7, 8]), PROPOSAL, RIGHT, support, {"top-p-first": Rule2Expectation(1, [7, 8])})
    judge.judge(_verdict(2, 1, [7, 8]), PROPOSAL, RIGHT, support, {})
    judge.finish()
    assert [row for row, _ in ctx.findings] == [ORDER_ROW, "R-6.4-RULE2", "P1-SAMP-2/DRAW"]
