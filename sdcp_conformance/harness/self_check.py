"""The harness checks itself: every SDCP message a played party sends against the CDDL, every injected fault for
evidence that it took effect (D-JUDGE-HARNESS-BUG-1).

A harness that sends a malformed message, or injects a fault that never happens, blames the implementation under
test for its own bug: the IUT's refusal of the malformed message looks like a deviation, and a case about a fault
passes without the fault. So, in every case (:func:`run_checked`, the runner's way of running a case body):

* **Messages.** "Message bodies use the media type application/sdcp+cbor" (§5.1) and are the shapes of §5.2, as
  ``sdcp.cddl`` writes them. Every body the harness sends the IUT (:meth:`~.iut.IutLink.send`) is checked against
  the rule of its resource before it leaves (:func:`request_rule`), and so is every answer a played server returns
  (:func:`response_rule`; a problem body against ``problem-details``, P1-ERR-1). A request that fails raises
  :class:`~sdcp_conformance.errors.HarnessBug` in the case at once; an answer that fails is recorded in the case's
  :class:`SelfCheck` (the played server cannot raise into the case) and ends the case when its body returns.
* **Deliberate messages.** Every map or typed message the harness sends as ``application/sdcp+cbor`` is checked,
  whoever built it (a valid message a case built with overrides included). A case that means to send something
  invalid says so, and nothing it sends that way is checked: a body given as raw bytes (the case encoded it itself,
  the suites' habit for hostile bodies), a map marked with :func:`deliberate` (``ctx.open(…, deliberate=True)``
  and the other context helpers that build a body), or a body labelled with another media type.
* **Faults.** Every fault a case injects is registered with its :class:`SelfCheck` when armed, counts the occasions
  it met (a request that reached it while armed; the time its status expiry was due) and the times it fired. A
  fault the case relies on (``must_fire``, the default of every injector) that never fired makes the case ERROR —
  where something met it and it did not fire (the injector failed), and also where nothing met it yet the case
  found nothing wrong (a pass resting on a fault that never happened). Where nothing met it and the case recorded a
  deviation, the deviation stands (a broken IUT that never sent the request the fault waited for) and a note says
  the fault never fired. A fault armed "in case" the IUT asks is armed with ``must_fire=False``.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sdcp_conformance.errors import HarnessBug
from sdcp_conformance.protocol import cddl
from sdcp_conformance.protocol.problems import PROBLEM_CBOR_MEDIA_TYPE, PROBLEM_MEDIA_TYPE, SDCP_MEDIA_TYPE
from sdcp_conformance.transport.types import media_type

if TYPE_CHECKING:
    from sdcp_conformance.harness.case import Case
    from sdcp_conformance.judge import Finding
    from sdcp_conformance.transport.types import Request, Response

# ---------------------------------------------------------------------------------------------- messages

_ROUTES: dict[tuple[str, tuple[str, ...]], tuple[str | None, str | None]] = {
    ("POST", ("sessions",)): ("session-open", "session-state"),
    ("PUT", ("sessions", "*", "drafter")): ("assignment", "session-state"),
    ("POST", ("sessions", "*", "policy")): ("policy", "session-state"),
    ("GET", ("sessions", "*", "output")): (None, "output"),
    ("POST", ("proposals",)): ("proposal", "verdict"),
    ("POST", ("assignments",)): ("assignment", None),
    ("POST", ("events",)): ("event", None),
    ("PUT", ("instances", "*", "status")): ("status", None),
}
"""§5.1 Table 1: (method, the resource's last path segments) → (the rule of the request body, of the success
answer's body) in ``sdcp.cddl``. §6.2: "POST {verifier}/proposals ... The verifier answers with a verdict"."""

PROBLEM_RULE = "problem-details"
"""P1-ERR-1: "Errors use RFC 9457 problem details" (``problem-details`` in ``sdcp.cddl``, D-CDDL-5)."""
FRONT = "client"
"""The profile's test front (P1-FRONT-1..3) is no SDCP resource: its bodies are not in ``sdcp.cddl``."""


def _route(method: str, path: str) -> tuple[str | None, str | None]:
    parts = [part for part in path.split("?", 1)[0].split("/") if part]
    for (routed, tail), rules in _ROUTES.items():
        if method != routed or len(parts) < len(tail):
            continue
        ending = parts[len(parts) - len(tail):]
        if all(want in ("*", got) for want, got in zip(tail, ending, strict=True)):
            before = parts[: len(parts) - len(tail)]
            if before[-1:] == [FRONT]:
                return None, None
            return rules
    return None, None


def request_rule(method: str, path: str) -> str | None:
    """The ``sdcp.cddl`` rule a request to ``method path`` carries (None: a resource that takes no SDCP body)."""
    return _route(method.upper(), path)[0]


def response_rule(method: str, path: str) -> str | None:
    """The ``sdcp.cddl`` rule a success answer of ``method path`` carries (None: one answered without a body)."""
    return _route(method.upper(), path)[1]


class Deliberate(dict[Any, Any]):
    """A map a case sends on purpose whatever it holds (a hostile or incomplete message): never checked.

    Built by :func:`deliberate`; the contexts' builders return one when a case overrides members. It encodes and
    reads like any map."""


def deliberate(body: Any) -> Deliberate:
    """Mark ``body`` (a map) as sent on purpose as it is: the harness does not check it against the CDDL."""
    return body if isinstance(body, Deliberate) else Deliberate(body)


def as_sent(body: Any, on_purpose: bool) -> Any:
    """``body`` marked :func:`deliberate` when the case sends it ``on_purpose`` (the contexts' ``deliberate=True``)."""
    return deliberate(body) if on_purpose and not isinstance(body, bytes) else body


def _findings(rule: str, value: object | bytes) -> str:
    return "; ".join(cddl.validate(rule, value))


class CaseTranscript(Protocol):
    """What the checks need of a case's transcript (:class:`~.transcript.CaseTranscript` has it)."""

    self_check: SelfCheck


class JudgedContext(Protocol):
    """What :func:`run_checked` needs of a case's context (:class:`~.judging.JudgedContext` has it)."""

    @property
    def transcript(self) -> CaseTranscript: ...

    @property
    def findings(self) -> list[Finding]: ...

    @property
    def notes(self) -> list[str]: ...


def refuse_message(transcript: CaseTranscript | None, rule: str, value: object, what: str) -> None:
    """Raise :class:`HarnessBug` (and record it in the case) if ``value``, a message the harness is about to send as
    ``what``, breaks the rule ``rule`` of ``sdcp.cddl``."""
    problems = _findings(rule, value)
    if not problems:
        return
    bug = f"{what} is not a valid {rule} (sdcp.cddl): {problems}"
    if transcript is not None:
        transcript.self_check.harness_bug(bug)
    raise HarnessBug(bug)


def request_bug(party: str, method: str, path: str, body: Any, raw: bytes | None, content_type: str) -> str | None:
    """Why the request the harness is about to send breaks ``sdcp.cddl`` (None: it does not, or it is deliberate:
    raw bytes, a :class:`Deliberate` map, another media type than application/sdcp+cbor)."""
    if raw is None or isinstance(body, (bytes, bytearray, Deliberate)) or media_type(content_type) != SDCP_MEDIA_TYPE:
        return None
    rule = request_rule(method, path)
    if rule is None:
        return None
    problems = _findings(rule, raw)
    if not problems:
        return None
    return (f"the {rule} the harness sent as {party} ({method} {path}) does not match sdcp.cddl: {problems} "
            "(a case that means to send an invalid message marks it deliberate)")


def refuse_request(transcript: CaseTranscript | None, party: str, method: str, path: str, body: Any,
                   raw: bytes | None, content_type: str) -> None:
    """Raise :class:`HarnessBug` (and record it in the case) if the request breaks ``sdcp.cddl``."""
    bug = request_bug(party, method, path, body, raw, content_type)
    if bug is None:
        return
    if transcript is not None:
        transcript.self_check.harness_bug(bug)
    raise HarnessBug(bug)


def response_bug(party: str, request: Request, response: Response) -> str | None:
    """Why the answer a played server returns breaks ``sdcp.cddl`` (None: it does not, or it has no SDCP body)."""
    if response.fault is not None:
        return None  # the server commits a transport fault instead of answering: nothing is sent
    label = media_type(response.header("content-type"))
    what = f"{party}'s answer {response.status} to {request.method} {request.path}"
    if response.status >= 400:
        if not response.body:
            return None
        if label == PROBLEM_MEDIA_TYPE:
            try:
                value: object = json.loads(response.body)
            except ValueError as exc:
                return f"{what} is not JSON: {exc}"
        elif label == PROBLEM_CBOR_MEDIA_TYPE:
            value = response.body
        else:
            return f"{what} is labelled {label or 'nothing'}, not a problem type (P1-ERR-1)"
        problems = _findings(PROBLEM_RULE, value)
        return f"{what} is not valid {PROBLEM_RULE}: {problems}" if problems else None
    rule = response_rule(request.method, request.path)
    if rule is None or not 200 <= response.status < 300:
        return None
    if label != SDCP_MEDIA_TYPE:
        return f"{what} is labelled {label or 'nothing'}, not {SDCP_MEDIA_TYPE} (§5.1)"
    problems = _findings(rule, response.body)
    return f"{what} is not a valid {rule} (sdcp.cddl): {problems}" if problems else None


def record_response(transcripts: Sequence[CaseTranscript], party: str, request: Request,
                    response: Response | None) -> None:
    """Check a played server's answer; a failure is recorded in every case it serves (the case ends ERROR)."""
    if response is None or not transcripts:
        return
    bug = response_bug(party, request, response)
    if bug is not None:
        for transcript in transcripts:
            transcript.self_check.harness_bug(bug)


# ---------------------------------------------------------------------------------------------- faults


class Evidence(Protocol):
    """A fault's evidence: whether the case relies on it, what met it, how often it fired."""

    must_fire: bool
    met: int
    """Occasions it had to take effect: requests that reached it while armed, the time its expiry was due."""
    fired: int

    @property
    def label(self) -> str: ...


@dataclass(eq=False)
class InjectedFault:
    """One fault the harness injected outside the cache's fault plan (a played verifier failing, a status let
    expire, a lost verdict): :attr:`met` and :attr:`fired` are counted where it applies."""

    label: str
    must_fire: bool = True
    met: int = 0
    fired: int = 0
    probe: Callable[[], None] | None = None
    """Brings :attr:`met` and :attr:`fired` up to date before the case is judged (a fault that takes effect with
    time, not with a request)."""


E = TypeVar("E", bound=Evidence)


class SelfCheck:
    """What one case's harness did wrong: its messages that broke the CDDL, the faults it injected."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bugs: list[str] = []
        self.faults: list[Evidence] = []

    def harness_bug(self, text: str) -> None:
        with self._lock:
            if text not in self.bugs:
                self.bugs.append(text)

    def register(self, fault: E) -> E:
        with self._lock:
            self.faults.append(fault)
        return fault

    def conclude(self, findings: Sequence[Finding], notes: list[str]) -> None:
        """After the case's body (it ran to its end or stopped on a finding): raise :class:`HarnessBug` for the
        first harness bug; a required fault that never fired but met nothing in a case with a deviation is noted."""
        from sdcp_conformance.judge import Verdict

        if self.bugs:
            more = len(self.bugs) - 1
            raise HarnessBug(self.bugs[0] + (f" (and {more} more)" if more > 0 else ""))
        deviated = any(finding.severity in (Verdict.FAILED, Verdict.NON_STRICT) for finding in findings)
        for fault in list(self.faults):
            if isinstance(fault, InjectedFault) and fault.probe is not None:
                fault.probe()
            if not fault.must_fire or fault.fired:
                continue
            if fault.met:
                raise HarnessBug(f"the injected fault {fault.label} did not take effect: {fault.met} time(s) it had "
                                 "to, it did not")
            if not deviated:
                raise HarnessBug(f"the injected fault {fault.label} did not take effect: nothing reached it, and the "
                                 "case found nothing wrong, so its verdict rests on a fault that never happened")
            notes.append(f"the injected fault {fault.label} never took effect (nothing reached it); the case's "
                         "findings stand")


_CURRENT: contextvars.ContextVar[SelfCheck | None] = contextvars.ContextVar("sdcp_self_check", default=None)
"""The self-check of the case whose task runs now (set by :func:`run_checked`; a task the case starts inherits it)."""


def register(fault: E) -> E:
    """Register ``fault`` with the case running now (outside a case it is only returned)."""
    check = _CURRENT.get()
    return check.register(fault) if check is not None else fault


def injected(label: str, *, must_fire: bool = True) -> InjectedFault:
    """A new fault registered with the case running now."""
    return register(InjectedFault(label, must_fire))


async def run_checked(case: Case, context: JudgedContext) -> None:
    """Run ``case``'s body, then the harness's checks of itself: a :class:`HarnessBug` replaces the body's end when
    it ran to its end or stopped on a finding (a finding the harness's own bug may have caused)."""
    from sdcp_conformance.harness.case import CaseStopped

    check = context.transcript.self_check
    _CURRENT.set(check)
    try:
        await case.run(context)
    except (CaseStopped, ExceptionGroup) as ended:
        if isinstance(ended, CaseStopped) or ended.subgroup(CaseStopped) is not None:
            check.conclude(context.findings, context.notes)
        raise
    check.conclude(context.findings, context.notes)


__all__ = [
    "PROBLEM_RULE",
    "CaseTranscript",
    "Deliberate",
    "Evidence",
    "InjectedFault",
    "JudgedContext",
    "SelfCheck",
    "as_sent",
    "deliberate",
    "injected",
    "record_response",
    "refuse_message",
    "refuse_request",
    "register",
    "request_bug",
    "request_rule",
    "response_bug",
    "response_rule",
    "run_checked",
]
