"""The history checker of the router suite: every rule a router's observed behaviour must satisfy.

One checker for everything the harness saw (Jepsen's discipline): the cases
call it at their end for the sessions they started, the failover campaign
after every step, the benchmark at the end. Each function reads the
:class:`~.router_history.History` and the harness's own facts and returns
:class:`Violation` records naming the requirement row they break; nothing
here asks the router what it meant to do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from sdcp_conformance.cache.commit_log import LogRecord
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.roles.router_assignment_checks import check_assignments, check_policies
from sdcp_conformance.harness.roles.router_history import FrontSeen, History, OpenSeen
from sdcp_conformance.harness.roles.router_truth import Facts, FrontSession, counted, expected_resume, fences
from sdcp_conformance.harness.roles.router_violations import Violation, encoding_violations, short
from sdcp_conformance.protocol.codec import decode_sequence
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.errors import MalformedMessage

# --------------------------------------------------------------------------- session-opens (§6.1, §6.9)


def uses_epoch(seen: OpenSeen) -> bool:
    """D-JUDGE-R9: an epoch is used once a verifier accepted a session-open carrying it.

    A failover's open that the verifier refused (a 4xx or 5xx, or a fault at the transport) leaves its epoch unused,
    so the router may offer the same epoch, the fence's, to the next candidate (§6.9: "opens the session at a new
    verifier with that epoch"); two verifiers that both accepted it are judged by the one-verifier-per-epoch check.
    """
    return seen.accepted


def check_opens(history: History, facts: Facts, front: FrontSession) -> list[Violation]:
    found: list[Violation] = []
    opens = [seen for seen in history.of(OpenSeen, front.id) if seen.opening is not None]
    first_log = opens[0].opening.commit_log if opens and opens[0].opening else None
    accepted_epochs: dict[int, str] = {}
    highest = 0
    for index, seen in enumerate(opens):
        opening = seen.opening
        assert opening is not None
        where = f"the session-open at {seen.verifier} (epoch {opening.epoch})"
        found += encoding_violations(where, seen.media_type, seen.deterministic, seen.seq)
        if digest_of(opening.contract) != front.digest:
            found.append(Violation("R-4.1-CONTRACT-UNCHANGED", f"{where} carries another contract than the front's "
                                   "(digest for digest)", short(front.digest), short(digest_of(opening.contract)),
                                   seen.seq))
        if not front.same_prompt(opening.prompt):
            found.append(Violation("P1-FRONT-1/OPEN", f"{where} carries another prompt than the front's",
                                   str(front.prompt), str(opening.prompt), seen.seq))
        if not opening.commit_log.startswith(facts.cache_base):
            found.append(Violation("R-6.1-SESSION-OPEN", f"{where} names a commit_log outside the MLC",
                                   f"a cache-ref under {facts.cache_base}", opening.commit_log, seen.seq))
        if opening.commit_log != first_log:
            found.append(Violation("R-6.9-ROUTER-RESUME", f"{where} names another commit log than the session's",
                                   str(first_log), opening.commit_log, seen.seq))
        if seen.expired_for is not None and seen.expired_for > facts.expiry_margin_s:
            found.append(Violation("R-6.1-NOT-EXPIRED", f"{where}: the verifier's status had expired "
                                   f"{seen.expired_for:.2f} s earlier", "an unexpired verifier", seen.verifier,
                                   seen.seq))
        if index == 0 and (opening.epoch != 1 or opening.resume is not None):
            found.append(Violation("R-6.1-SESSION-OPEN", f"{where}: the first session-open is not at epoch 1 "
                                   "without resume", "epoch 1, no resume",
                                   f"epoch {opening.epoch}, resume {opening.resume is not None}", seen.seq))
        if opening.epoch > 1:
            found += _check_resume(seen, front, highest, where)
        if seen.accepted:
            other = accepted_epochs.get(opening.epoch)
            if other is not None and other != seen.verifier:
                row = "R-6.9-FENCE-FIRST" if opening.epoch > 1 else "R-6.1-SESSION-OPEN"
                found.append(Violation(row, f"{where}: the session is open at {other} and {seen.verifier} with the "
                                       "same epoch", "one verifier per epoch", f"{other}, {seen.verifier}", seen.seq))
            accepted_epochs.setdefault(opening.epoch, seen.verifier)
        if uses_epoch(seen):
            highest = max(highest, opening.epoch)
    return found


def _check_resume(seen: OpenSeen, front: FrontSession, highest: int, where: str) -> list[Violation]:
    """§6.9 and P1-RTR-6 on a failover's session-open, against the log as it stood when the open arrived."""
    found: list[Violation] = []
    opening = seen.opening
    assert opening is not None
    resume = opening.resume
    if resume is None:
        return [Violation("R-6.9-ROUTER-RESUME", f"{where}: a higher epoch without the resume member",
                          "resume", "none", seen.seq)]
    if opening.epoch <= highest:
        found.append(Violation("R-6.9-FENCE-FIRST", f"{where}: the failover's epoch is not new (epoch {highest} "
                               "was used before)", f"epoch > {highest}", str(opening.epoch), seen.seq))
    log_fences = fences(seen.log)
    if opening.epoch not in log_fences:
        found.append(Violation("R-6.9-FENCE-FIRST", f"{where}: the commit log held no fence with epoch "
                               f"{opening.epoch} when the session was opened at the new verifier",
                               f"fence {{epoch: {opening.epoch}}} before the open", f"fences {log_fences}", seen.seq))
        return found  # without the fence the log's records are not settled: the resume cannot be judged
    round_, committed, digest, tokens = expected_resume(seen.log, front)
    got = (resume.round, resume.committed, resume.digest)
    if got != (round_, committed, digest):
        found.append(Violation("R-6.9-ROUTER-RESUME", f"{where}: resume is not the last commit record that no "
                               "higher fence precedes", f"round {round_}, committed {committed}, {short(digest)}",
                               f"round {resume.round}, committed {resume.committed}, {short(resume.digest)}",
                               seen.seq))
    if seen.tokens_object != tokens:
        found.append(Violation("R-5.2-COMMITTED-TOKENS", f"{where}: committed_tokens is not the concatenated emitted "
                               "tokens of the counted records", str(list(tokens)),
                               "missing or not a token list" if seen.tokens_object is None
                               else str(list(seen.tokens_object)), seen.seq))
    return found


# --------------------------------------------------------------------------- the router's fence appends (§6.8)


def check_fences(history: History, facts: Facts, front: FrontSession) -> list[Violation]:
    found: list[Violation] = []
    opens = [seen.opening for seen in history.of(OpenSeen, front.id) if seen.opening is not None]
    if not opens:
        return found
    log_uri = opens[0].commit_log
    if not log_uri.startswith(facts.cache_base):
        return found  # check_opens reports a commit log outside the MLC
    path = urlsplit(log_uri).path
    for seen in history.at_path(path):
        if seen.peer != facts.router or seen.method in ("GET", "HEAD"):
            continue
        where = f"the router's {seen.method} of the commit log"
        if seen.method != "PUT":
            found.append(Violation("R-6.8-CONDITIONAL", f"{where}: a commit log is only appended to", "PUT",
                                   seen.method, seen.seq))
            continue
        if seen.if_match is None and seen.if_none_match != "*":
            found.append(Violation("R-6.8-CONDITIONAL", f"{where} is not conditional", "If-Match (or "
                                   "If-None-Match: * for a new log)", "no precondition", seen.seq))
        if seen.before is None and seen.if_none_match != "*" and 200 <= seen.status < 300:
            found.append(Violation("P1-LOG-3/ROUTER", f"{where} created the log without If-None-Match: *",
                                   "If-None-Match: *", f"If-Match {seen.if_match}", seen.seq))
        if not 200 <= seen.status < 300:
            continue
        old = seen.before or b""
        if not seen.body.startswith(old):
            found.append(Violation("R-6.8-CONDITIONAL", f"{where} rewrote the log instead of appending to it",
                                   "the old content followed by the new record", "other content", seen.seq))
            continue
        try:
            added = decode_sequence(seen.body[len(old):])
        except (MalformedMessage, InvalidArgument) as exc:
            found.append(Violation("R-6.8-FENCE-RECORD", f"{where} appended something that is not a record: {exc}",
                                   "{epoch}", "undecodable", seen.seq))
            continue
        for item in added:
            if not isinstance(item, dict) or set(item) != {"epoch"} or type(item["epoch"]) is not int:
                found.append(Violation("R-6.8-FENCE-RECORD", f"{where} appended {item!r}: a fence record carries "
                                       "only an epoch", "{epoch: E+1}", repr(item), seen.seq))
    return found


# --------------------------------------------------------------------------- the front's output (§6.7, P1-FRONT-2)


def check_front(history: History, front: FrontSession, log: Sequence[LogRecord]) -> list[Violation]:
    found: list[Violation] = []
    truth = counted(log).tokens
    opens = [seen for seen in history.of(OpenSeen, front.id) if seen.opening is not None and seen.accepted]
    seen_epoch = 0
    for read in history.of(FrontSeen, front.id):
        output = read.output
        if output is None:
            continue
        where = f"the front's output from {read.start}"
        current = max((o.opening.epoch for o in opens if o.seq < read.asked and o.opening), default=0)
        if output.from_ != read.start:
            found.append(Violation("R-6.7-FRONT-END", f"{where} says it starts at {output.from_}", str(read.start),
                                   str(output.from_), read.seq))
            continue
        tokens = tuple(output.tokens)
        expected = truth[read.start:read.start + len(tokens)]
        right = tokens == expected
        if not right:
            found.append(Violation("R-6.7-FRONT-END", f"{where} (epoch {output.epoch}) is not the committed output at "
                                   "those indices: tokens lost, duplicated or never committed", str(list(expected)),
                                   str(list(tokens)), read.seq))
        # D-JUDGE-R13: the epoch on the front's own output is P1-FRONT-2's message; a stale one is the draft's
        # deviation (output a fenced verifier could extend, §6.7, §6.9) only where the tokens are not the counted log's
        label = "" if right else " and its tokens are not the committed output"
        if output.epoch < current:
            found.append(Violation("P1-FRONT-2/OUTPUT" if right else "R-6.9-OLD-EPOCH",
                                   f"{where} carries epoch {output.epoch}, although the session was open at epoch "
                                   f"{current} before it was asked{label}", f"epoch >= {current}",
                                   str(output.epoch), read.seq))
        if output.epoch < seen_epoch:
            found.append(Violation("P1-FRONT-2/OUTPUT" if right else "R-6.7-FRONT-END",
                                   f"{where} carries epoch {output.epoch}, lower than the {seen_epoch} the front "
                                   f"already sent{label}", f"epoch >= {seen_epoch}", str(output.epoch), read.seq))
        seen_epoch = max(seen_epoch, output.epoch)
        if output.final:
            if output.finish is None or int(output.finish) not in (4, 5):
                found.append(Violation("P1-FRONT-2/OUTPUT", f"{where} is final without finish 4 or 5", "finish",
                                       str(output.finish), read.seq))
            if read.start + len(tokens) != len(truth) and (output.finish is None or int(output.finish) == 4):
                found.append(Violation("R-6.7-FRONT-END", f"{where} is final after {read.start + len(tokens)} "
                                       f"tokens, but {len(truth)} were committed", str(len(truth)),
                                       str(read.start + len(tokens)), read.seq))
    return found


def check_session(history: History, facts: Facts, front: FrontSession, log: Sequence[LogRecord]) -> list[Violation]:
    """Every check, for one session started at the front; ``log`` is its commit log now."""

    return sorted([*check_opens(history, facts, front), *check_fences(history, facts, front),
                   *check_assignments(history, facts, front, log), *check_policies(history, front),
                   *check_front(history, front, log)], key=lambda violation: violation.seq)


def rows_of(violations: Iterable[Violation]) -> set[str]:
    return {violation.row for violation in violations}


__all__ = ["check_fences", "check_front", "check_opens", "check_session", "rows_of", "uses_epoch"]
