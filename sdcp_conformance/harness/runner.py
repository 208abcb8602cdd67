"""Runs cases against an environment: sanity first and last, the rest in a seeded random order.

Like tlsfuzzer's runner, the sanity case (open a session, one valid round)
runs first — if it fails, the IUT is dead or misconfigured and the cases
that need a working conversation are skipped with that reason instead of
failing a hundred times; standalone cases (the transport checks) still run —
and last, so that an IUT that broke during the run says so. The order's seed
is recorded so an order-dependent IUT bug can be replayed. Every case has a
timeout; a case that raises something unexpected is a harness ERROR.

A case's verdict is the worst of its findings (P1-JUDGE-2). The run's status
follows P1-JUDGE-3: PASSED only if the sanity case passed both times and at
least one case of every area ran; otherwise INCOMPLETE, whatever else failed.
"""

from __future__ import annotations

import asyncio
import random
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from sdcp_conformance.errors import HarnessBug
from sdcp_conformance.harness.capabilities import skip_reason
from sdcp_conformance.harness.case import Case, CaseIncomplete, CaseSkipped, CaseStopped, Catalogue, Verdict
from sdcp_conformance.harness.expected import ExpectedFailures
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.patience import RERUN_SCALE, Patience
from sdcp_conformance.harness.self_check import run_checked
from sdcp_conformance.harness.shards import recorded_durations
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.harness.terms import Terms, headline
from sdcp_conformance.harness.transcript import CaseTranscript, DeadlineMiss, Entry
from sdcp_conformance.judge import TABLE, Finding, deviation, worst
from sdcp_conformance.judge.declaration import Declaration
from sdcp_conformance.judge.requirement_sets import RequirementSet
from sdcp_conformance.judge.scoring import (
    RUN_FAILED,
    RUN_INCOMPLETE,
    RUN_PASSED,
    CaseOutcome,
    incomplete_reasons,
    run_failed,
    run_status,
)

EXIT_CODES = {RUN_PASSED: 0, RUN_FAILED: 1, RUN_INCOMPLETE: 3}
"""Exit status of a certification (2 is a usage error, 130 an interruption)."""


class HarnessEnvironment(Protocol):
    """What the runner needs of the harness's side of a certification, whatever the role under test."""

    config: TargetConfig
    current: CaseTranscript | None
    supports_concurrency: ClassVar[bool]
    """Cases that declare no global state may run at the same time."""

    @property
    def patience(self) -> Patience: ...

    def capabilities(self) -> set[str]: ...

    def new_context(self, case: Case, seed: int, run: str) -> JudgedContext: ...

    def reset(self) -> None: ...

    async def before_case(self, case: Case) -> None: ...

    def release(self, context: Any) -> None: ...

    async def after_case(self, context: Any) -> None: ...

    def describe(self) -> dict[str, Any]: ...

    async def stop(self) -> None: ...



@dataclass
class CaseResult:
    case: Case
    verdict: Verdict
    message: str = ""
    expected: list[str] = field(default_factory=list)
    actual: str = ""
    duration_s: float = 0.0
    transcript: list[Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    expected_failure: str | None = None
    """The reason from the expected-failures file, when this case is listed there."""
    run: str = "main"
    """``"sanity-first"``, ``"main"`` or ``"sanity-last"``."""
    findings: list[Finding] = field(default_factory=list)
    """Every deviation the case recorded, in order (P1-JUDGE-2: the report lists all of them)."""
    attachments: dict[str, Any] = field(default_factory=dict)
    """Structured evidence the case attached (``ctx.attach``), JSON-ready; the HTML report plots it."""
    completed: bool = False
    """The case ran to its end: no finding stopped it, it did not time out, skip or break."""
    deadline_misses: list[DeadlineMiss] = field(default_factory=list)
    """Deadlines the IUT missed in this case (P1-JUDGE-5): time, not by itself a deviation."""
    disturbed: list[str] = field(default_factory=list)
    """Lost answers whose resend was refused as the draft allows (D-JUDGE-LOST-2): what they said is unknown."""
    timed: set[int] = field(default_factory=set)
    """Indices in :attr:`findings` of the findings those misses caused."""
    rerun: bool = False
    """This is the result of the case's second run, alone after the others (D-JUDGE-TIME-3)."""
    features_used: set[str] = field(default_factory=set)
    """The optional features the messages the harness sent in this case exercised (:mod:`~.features`)."""

    @property
    def outcome(self) -> CaseOutcome:
        """What the run's verdict reads of this result (:mod:`~sdcp_conformance.judge.scoring`: whether it ran,
        failed the run, or — a sanity case — passed, D-JUDGE-SANITY)."""
        return CaseOutcome(self.case.id, self.run, self.case.area, self.verdict, self.completed, self.message)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.case.describe(), "verdict": self.verdict.value, "message": self.message,
            "expected": self.expected, "actual": self.actual, "duration_s": round(self.duration_s, 4),
            "notes": self.notes, "expected_failure": self.expected_failure, "run": self.run,
            "completed": self.completed, "rerun": self.rerun,
            "findings": [finding.to_json() for finding in self.findings],
            "evidence": [entry.to_json() for entry in self.transcript],
            **({"attachments": self.attachments} if self.attachments else {}),
        }


Progress = Callable[[CaseResult], None]


@dataclass
class RunReport:
    seed: int
    results: list[CaseResult]
    started: float
    finished: float
    environment: dict[str, Any]
    areas: tuple[str, ...] = ()
    """The areas this run had to cover: every area of the role's suite, or of the selected cases."""
    strict: bool = False
    """``--strict``: a NON-STRICT case fails the run too."""
    selectors: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None
    """``(K, N)`` when this run is shard K of N (``certify --shard``); the merged report joins them."""
    requirements: RequirementSet | None = None
    """The requirement set the run was scored against (None: the harness's own table, unscored)."""
    declaration: Declaration | None = None
    """The vendor's declaration the test plan followed (None: every feature taken as claimed)."""

    def outcomes(self) -> list[CaseOutcome]:
        return [result.outcome for result in self.results]

    @property
    def failed(self) -> bool:
        """Whether any case failed (FAILED, ERROR, XPASS; NON-STRICT too under ``strict``)."""
        return run_failed(self.outcomes(), self.strict)

    def incomplete_reasons(self) -> list[str]:
        """Why this run cannot certify anything (P1-JUDGE-3); empty when it can (:mod:`~sdcp_conformance.judge.
        scoring`, the rules ``bundle verify`` recomputes the run's verdict by)."""
        return incomplete_reasons(self.outcomes(), self.areas)

    @property
    def status(self) -> str:
        """PASSED, FAILED or INCOMPLETE (P1-JUDGE-3: an incomplete run certifies nothing, whatever it found)."""
        return run_status(self.outcomes(), self.areas, self.strict)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def skipped(self) -> list[CaseResult]:
        return [result for result in self.results if result.verdict is Verdict.SKIPPED]

    def counts(self) -> dict[str, int]:
        tally: dict[str, int] = {}
        for result in self.results:
            tally[result.verdict.value] = tally.get(result.verdict.value, 0) + 1
        return tally


async def run_case(env: HarnessEnvironment, case: Case, seed: int, run: str = "main", *,
                   shared: bool = False, scale: float = 1.0) -> CaseResult:
    """Run one case with its timeout; its verdict is the worst of its findings (P1-JUDGE-2).

    ``shared``: other cases run at the same time, so only this case's own
    faults are undone afterwards (the environment's ``release``), never the
    shared state a case running alone may change (``reset``). ``scale``: every
    deadline of the case (its requests', its own) is that many times longer —
    a case running again alone after a missed deadline (D-JUDGE-TIME-3).
    """
    missing = [need for need in case.requires if need not in env.capabilities()]
    if missing:
        return CaseResult(case, Verdict.SKIPPED, skip_reason(missing), run=run)
    try:
        await env.before_case(case)
    except OSError as exc:
        return CaseResult(case, Verdict.ERROR, f"harness error: a listener this case needs could not start: "
                          f"{exc}", run=run)
    if not shared:
        env.reset()
    # A case run again draws other sessions: a target IUT still holds the first run's (D-ID-1).
    context = env.new_context(case, seed, run if scale == 1.0 else f"{run}/again")
    started = time.perf_counter()
    result = CaseResult(case, Verdict.PASSED, run=run, rerun=scale != 1.0)
    env.patience.scale = scale
    try:
        try:
            await _within_deadline(case, context, scale)
            result.completed = True
        except ExceptionGroup as group:  # a case running sessions in a TaskGroup: judged by one of its leaves
            raise _leaf_to_judge(group) from group
    except CaseStopped:
        pass  # its finding is recorded already
    except CaseSkipped as skipped:
        result.verdict, result.message = Verdict.SKIPPED, skipped.reason
    except CaseIncomplete as incomplete:
        result.verdict, result.message = Verdict.INCOMPLETE, f"incomplete: {incomplete.cause}"
    except TimeoutError:
        row, message, refused = context.attributed("R-5.1-RESOURCES", _timed_out(case, context, started, scale)
                                                   + _in_flight(context))
        context.missed_deadline("no conclusion of the case", case.timeout_s * scale, "the case's own timeout")
        context.deviate(row, message, actual=refused, late=not refused)
    except HarnessBug as bug:  # the harness failed its own check (harness/self_check.py), never blamed on the IUT
        result.verdict, result.message = Verdict.ERROR, f"harness bug: {bug}"
    except Exception as exc:  # a bug in the harness or the case, never blamed on the IUT
        result.verdict = Verdict.ERROR
        result.message = f"harness error: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
    finally:
        env.patience.scale = 1.0
        env.release(context)
        if not shared:
            env.reset()
        await env.after_case(context)  # async undoing (a load set through the target's hook)
    _note_lost_answers(context)
    result.duration_s = time.perf_counter() - started
    result.transcript = context.transcript.entries()
    result.notes = context.notes
    result.findings = list(context.findings)
    result.timed = set(context.timed)
    result.deadline_misses = list(context.transcript.deadline_misses)
    result.disturbed = list(context.transcript.disturbed)
    result.attachments = dict(context.attachments)
    result.features_used = set(context.transcript.features_used)
    if result.verdict is Verdict.PASSED:
        _conclude(result)
    return result


LOST_ROW = "P1-JUDGE-6/LOST-ANSWER"


LOST_SHOWN = 3
"""How many lost answers the finding quotes (the transcript holds every one)."""


def _note_lost_answers(context: JudgedContext) -> None:
    """P1-JUDGE-6: the requests the IUT admitted and never answered because their connection ended, each sent
    again by the harness, are one INFORMATIONAL transport finding (RFC 9113 §6.8) for the case — one cause, one
    finding (P1-JUDGE-4) — quoting the first few; never a deviation."""
    lost = list(context.transcript.lost_answers)
    if not lost:
        return
    more = len(lost) - LOST_SHOWN
    context.informational(f"RFC 9113 §6.8: {len(lost)} request(s) the IUT admitted were left unanswered when their "
                          "connection ended; as a conformant client the harness sent each again on a new connection "
                          f"(P1-JUDGE-6): {'; '.join(lost[:LOST_SHOWN])}{f'; and {more} more' if more > 0 else ''}",
                          row=LOST_ROW)


def needs_rerun(result: CaseResult) -> bool:
    """D-JUDGE-TIME-3 (P1-JUDGE-5): a case that did not pass and missed a deadline runs again, alone, after the
    others, with longer deadlines; its first verdict is not reported. So does one whose conversation lost an answer
    it could not get back (D-JUDGE-LOST-2, P1-JUDGE-6)."""
    return (not result.rerun and bool(result.deadline_misses or result.disturbed)
            and result.verdict in (Verdict.FAILED, Verdict.NON_STRICT))


def after_rerun(first: CaseResult, second: CaseResult) -> CaseResult:
    """The verdict of a case run twice (D-JUDGE-TIME-3): the second run's, where a deadline missed again turns
    the findings it caused into one, "too slow: no answer in N s, twice", with the stage; the findings that do
    not come from time stay as they are."""
    missed = "; ".join(f"{miss.what} [{miss.stage}]" for miss in first.deadline_misses[:3])
    more = len(first.deadline_misses) - 3
    why = []
    if first.deadline_misses:
        why.append(f"P1-JUDGE-5: the first run missed {len(first.deadline_misses)} deadline(s) ({missed}"
                   f"{f'; and {more} more' if more > 0 else ''})")
    if first.disturbed:
        why.append(f"P1-JUDGE-6: the first run lost an answer whose resend was refused ({first.disturbed[0]})")
    second.notes.insert(0, f"{'; '.join(why)}; it was {first.verdict.value}; this is the case run again alone "
                        f"after the others, with deadlines {RERUN_SCALE:g} times longer")
    if second.verdict not in (Verdict.FAILED, Verdict.NON_STRICT):
        return second
    if second.disturbed:
        # D-JUDGE-LOST-2: twice an answer was lost and its resend refused as the draft allows once the request had
        # been processed: what the lost answer said is unknown, so nothing that followed can be judged (P1-JUDGE-4).
        second.verdict = Verdict.INCOMPLETE
        second.message = (f"incomplete: twice the IUT's connection ended before an answer came and the resend was "
                          f"refused, as the draft allows once the lost request had been processed, so what the lost "
                          f"answer said is unknown (P1-JUDGE-6): {second.disturbed[0]}")
        second.findings = [finding for finding in second.findings if finding.severity is Verdict.INFORMATIONAL]
        second.transcript = [*first.transcript, *second.transcript]
        return second
    if not second.deadline_misses:
        return second
    kept = [finding for index, finding in enumerate(second.findings) if index not in second.timed]
    timed = [finding for index, finding in enumerate(second.findings) if index in second.timed and finding.row]
    # Judged at the row the first finding the miss caused was judged at (a front's silence is P1-FRONT-1's).
    row = TABLE[timed[0].row] if timed else TABLE["R-5.1-RESOURCES"]
    miss = second.deadline_misses[0]
    waited = f" in {miss.deadline_s:g} s" if miss.deadline_s is not None else ""
    again = deviation(row, f"too slow: no answer{waited}, twice ({miss.stage}): {miss.what}; "
                      f"the first time: {first.deadline_misses[0].what}",
                      expected=[f"an answer within {miss.deadline_s:g} s" if miss.deadline_s else "an answer"],
                      actual=f"{len(second.deadline_misses)} missed deadline(s) running alone")
    evidence = (second.transcript[-1].sequence,) if second.transcript else ()
    second.transcript = [*first.transcript, *second.transcript]  # the evidence of both misses, in order
    second.findings = [*kept, replace(again, evidence=evidence)]
    second.timed = set()
    second.verdict = Verdict.PASSED
    _conclude(second)
    return second


def _leaf_to_judge(group: BaseExceptionGroup[Exception]) -> Exception:
    """The exception a failed TaskGroup is judged by: a harness bug if there is one (it must not hide behind a
    finding), else the first leaf (a stop or a skip; every task's findings are recorded already)."""
    leaves: list[Exception] = []

    def collect(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                collect(inner)
        elif isinstance(exc, Exception):
            leaves.append(exc)

    collect(group)
    judged = (CaseStopped, CaseSkipped, CaseIncomplete, TimeoutError)
    bugs = [leaf for leaf in leaves if not isinstance(leaf, judged)]
    return (bugs or leaves or [RuntimeError(str(group))])[0]


def _conclude(result: CaseResult) -> None:
    """The verdict and headline of a case that ran to its end (or stopped on a finding)."""
    result.verdict = worst([finding.severity for finding in result.findings])
    if result.findings:
        headline(result, [(finding, finding.severity) for finding in result.findings])


SLOW_IUT_WINDOW_S = 15.0
"""D-JUDGE-SLOW-IUT: a case whose timeout passes while the IUT answered one of its requests within this window is
given this much longer, again and again: a slow engine that answers is not a hung one (a verifier taking 3 s a
round cannot finish a statistical case's rounds in its 120 s, and was reported as hung)."""
SLOW_IUT_FACTOR = 3.0
"""However steadily the IUT answers, a case ends at this many times its timeout."""


async def _within_deadline(case: Case, context: JudgedContext, scale: float = 1.0) -> None:
    """Run the case within its timeout (times ``scale``), extended while the IUT keeps answering
    (:data:`SLOW_IUT_WINDOW_S`); raises TimeoutError, the case cancelled, when the IUT stops answering or the
    extensions run out."""
    task = asyncio.ensure_future(run_checked(case, context))
    loop = asyncio.get_running_loop()
    started = loop.time()
    timeout_s = case.timeout_s * scale
    limit = timeout_s
    try:
        while True:
            await asyncio.wait({task}, timeout=max(0.0, started + limit - loop.time()))
            if task.done():
                task.result()
                return
            answered = context.transcript.last_answer_at
            now = time.monotonic()
            if (answered is None or now - answered > SLOW_IUT_WINDOW_S
                    or loop.time() - started >= SLOW_IUT_FACTOR * timeout_s):
                raise TimeoutError
            limit = min(loop.time() - started + SLOW_IUT_WINDOW_S, SLOW_IUT_FACTOR * timeout_s)
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
            if not task.cancelled():
                task.exception()  # retrieved: the case's own end while it was being cancelled is not reported


def _timed_out(case: Case, context: JudgedContext, started: float, scale: float) -> str:
    took = time.perf_counter() - started
    answered = context.transcript.last_answer_at
    if answered is not None and time.monotonic() - answered <= SLOW_IUT_WINDOW_S:
        return (f"no conclusion within {took:.0f} s ({SLOW_IUT_FACTOR:g} times the case's "
                f"{case.timeout_s * scale:.0f} s): "
                f"the IUT was still answering (its last answer {time.monotonic() - answered:.1f} s before), too "
                "slowly for the case to end")
    return f"no conclusion within {took:.0f} s: the IUT hung"


def _in_flight(context: JudgedContext) -> str:
    """The last exchange the case started, so the evidence shows what the IUT was asked when it hung."""
    entries = context.transcript.entries()
    if not entries:
        return ""
    last = entries[-1]
    return f"; last exchange: #{last.sequence} {last.method} {last.target} ({last.status or last.note or 'no answer'})"


LONG_CASE_S = 1.0
"""A case recorded (``durations.json``) as taking at least this long starts before the shorter ones."""


def order_cases(catalogue: Catalogue, selected: Sequence[Case], seed: int) -> list[tuple[Case, str]]:
    """Sanity first and last (when it exists), the rest shuffled by ``seed``, then grouped: the long cases
    (the statistical ones), the other shared cases, the exclusive cases; each group keeps the shuffled order.

    The grouping is for the wall time of a run where cases share the IUT: an exclusive case waits until every
    running case has ended, so exclusive cases spread among the others left the IUT to one long case at a time
    (in one certification of the reference, for two fifths of the run), and a long case started last ran on
    alone. Against the Node.js stand-in verifier the run took a third less time grouped.
    """
    sanity = catalogue.cases.get(catalogue.sanity_id or "")
    rest = [case for case in selected if sanity is None or case.id != sanity.id]
    random.Random(seed).shuffle(rest)
    durations = recorded_durations(catalogue)
    rest.sort(key=lambda case: 2 if case.exclusive else 0 if durations.get(case.id, 0.0) >= LONG_CASE_S else 1)
    if sanity is None:
        return [(case, "main") for case in rest]
    return [(sanity, "sanity-first"), *[(case, "main") for case in rest], (sanity, "sanity-last")]


DEFAULT_JOBS = 4
"""Cases run at the same time against one IUT, when its environment allows (sessions are the cases' own)."""


async def run_catalogue(env: HarnessEnvironment, catalogue: Catalogue, selected: Sequence[Case], *, seed: int,
                        expected_failures: ExpectedFailures | None = None,
                        progress: Progress | None = None, strict: bool = False,
                        selectors: Sequence[str] = (), jobs: int = DEFAULT_JOBS,
                        requirements: RequirementSet | None = None,
                        declaration: Declaration | None = None) -> RunReport:
    """Run the sanity case, then the others (``jobs`` at a time where allowed), then the sanity case again.

    Cases that change shared state (``exclusive``) run alone; the others
    share the IUT, each with its own sessions, cache objects and transcript.
    Results are listed in the seeded order whatever the order they finished
    in, so a report does not depend on timing.
    """
    started = time.time()
    plan = order_cases(catalogue, selected, seed)
    results: list[CaseResult | None] = [None] * len(plan)
    concurrent = jobs > 1 and env.supports_concurrency
    state = _Schedule(env, seed, expected_failures, progress, results, Terms(requirements, declaration))
    running: set[asyncio.Task[None]] = set()
    slots = asyncio.Semaphore(max(1, jobs))
    try:
        for index, (case, run) in enumerate(plan):
            if run == "sanity-last":
                await _drain(running)
                await state.rerun_pending()
            if state.dead and run == "main" and not case.standalone:
                state.finish(index, CaseResult(case, Verdict.SKIPPED, f"not run: the sanity case failed first "
                                                                      f"({state.dead})", run=run))
                continue
            if not concurrent or run != "main" or case.exclusive:
                await _drain(running)
                await state.run(index, case, run, shared=False)
                continue
            await slots.acquire()
            task = asyncio.ensure_future(state.run(index, case, run, shared=True))
            task.add_done_callback(lambda _done: slots.release())
            running.add(task)
            task.add_done_callback(running.discard)
        await _drain(running)
        await state.rerun_pending()
    except BaseException:
        # Interrupted (Ctrl-C cancels the run while it waits for a slot) or failed: no case may outlive the run,
        # or it would go on against an environment stopped under it and be reported as a harness error.
        await _cancel(running)
        raise
    areas = tuple(dict.fromkeys(case.area for case in selected))
    done = [result for result in results if result is not None]
    return RunReport(seed, done, started, time.time(), env.describe(), areas=areas, strict=strict,
                     selectors=tuple(selectors), requirements=requirements, declaration=declaration)


class _Schedule:
    """What the cases of one run share: where results go, the sanity verdict, the callbacks."""

    def __init__(self, env: HarnessEnvironment, seed: int, expected: ExpectedFailures | None,
                 progress: Progress | None, results: list[CaseResult | None], terms: Terms) -> None:
        self.env, self.seed, self.expected, self.progress, self.results = env, seed, expected, progress, results
        self.terms = terms
        self.dead = ""
        self.pending: list[tuple[int, Case, CaseResult]] = []
        """Main cases that missed a deadline and did not pass: run again alone at the end (D-JUDGE-TIME-3)."""

    async def run(self, index: int, case: Case, run: str, *, shared: bool) -> None:
        unclaimed = self.terms.unclaimed(case)
        if unclaimed:
            self.finish(index, CaseResult(case, Verdict.NOT_CLAIMED, unclaimed, run=run))
            return
        result = await run_case(self.env, case, self.seed, run, shared=shared)
        if needs_rerun(result):
            if run == "main":
                self.pending.append((index, case, result))
                return
            result = after_rerun(result, await run_case(self.env, case, self.seed, run, scale=RERUN_SCALE))
        if run == "sanity-first" and not result.outcome.sanity_passed:
            self.dead = (result.message or result.verdict.value).splitlines()[0]
        self.finish(index, result)

    async def rerun_pending(self) -> None:
        """Each case that missed a deadline and did not pass, again, alone, with longer deadlines."""
        pending, self.pending = self.pending, []
        for index, case, first in pending:
            second = await run_case(self.env, case, self.seed, first.run, scale=RERUN_SCALE)
            self.finish(index, after_rerun(first, second))

    def finish(self, index: int, result: CaseResult) -> None:
        self.terms.apply(result)
        if self.expected is not None:
            self.expected.apply(result)
        self.results[index] = result
        if self.progress is not None:
            self.progress(result)


async def _drain(running: set[asyncio.Task[None]]) -> None:
    if running:
        await asyncio.gather(*list(running))


async def _cancel(running: set[asyncio.Task[None]]) -> None:
    """Cancel the cases still running and wait until each has ended (a cancelled case reports nothing)."""
    tasks = list(running)
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


__all__ = [
    "DEFAULT_JOBS",
    "EXIT_CODES",
    "RUN_FAILED",
    "RUN_INCOMPLETE",
    "RUN_PASSED",
    "CaseResult",
    "HarnessEnvironment",
    "Progress",
    "RunReport",
    "after_rerun",
    "needs_rerun",
    "order_cases",
    "run_case",
    "run_catalogue",
]
