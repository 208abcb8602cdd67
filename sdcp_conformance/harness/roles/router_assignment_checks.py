"""The history checker's rules for what a router tells verifiers and drafters about a drafter, and policies.

§6.1 ("It first informs the verifier with PUT sessions/{id}/drafter, and then
sends the assignment, carrying the current round, committed length, and
digest"), §5.2 (the assignment's members), §6.6 (policies and the sampling of
later assignments), §6.9 (the new assignment after a failover, the new
drafter starting from the committed prefix) and the profile's P1-RTR-3/4 and
P1-DRF-2, judged on the history (:mod:`.router_checks` holds the rest).
"""

from __future__ import annotations

from collections.abc import Sequence

from sdcp_conformance.cache.commit_log import LogRecord
from sdcp_conformance.harness.roles.router_history import AssignSeen, History, OpenSeen, PolicySeen, PutSeen
from sdcp_conformance.harness.roles.router_truth import Facts, FrontSession, counted
from sdcp_conformance.harness.roles.router_violations import CBOR, Violation, encoding_violations, short
from sdcp_conformance.protocol.contract import digest_of
from sdcp_conformance.protocol.messages import Assignment


def _common(assignment: Assignment, facts: Facts, front: FrontSession, tokens: tuple[int, ...] | None,
            truth: tuple[int, ...], where: str, seq: int) -> list[Violation]:
    """What a PUT …/drafter body and the drafter's assignment must both get right."""
    found: list[Violation] = []
    if digest_of(assignment.contract) != front.digest:
        found.append(Violation("R-4.1-CONTRACT-UNCHANGED", f"{where} carries another contract than the front's",
                               short(front.digest), short(digest_of(assignment.contract)), seq))
    drafter = facts.drafter_named(assignment.drafter)
    permitted = assignment.contract.drafters
    if drafter is None or (permitted is not None and facts.drafter_models[drafter] not in permitted):
        found.append(Violation("R-6.1-PERMITTED", f"{where} names drafter {assignment.drafter}, whose model the "
                               "contract does not permit (or that is no configured drafter)",
                               "a drafter with a permitted model", assignment.drafter, seq))
    m_max = assignment.contract.m_max
    if not 1 <= assignment.m_init <= max(1, m_max):
        found.append(Violation("P1-DRF-2/ROUTER-M-INIT", f"{where} has m_init {assignment.m_init}, not "
                               f"max(1, min(m_max={m_max}, m_init))", f"1..{max(1, m_max)}", str(assignment.m_init),
                               seq))
    if assignment.committed_tokens is not None and tokens != truth[:assignment.committed]:
        found.append(Violation("R-5.2-COMMITTED-TOKENS", f"{where}: committed_tokens is not the committed output so "
                               "far", str(list(truth[:assignment.committed])),
                               "missing or not a token list" if tokens is None else str(list(tokens)), seq))
    if assignment.committed > len(truth) or assignment.digest != front.d(truth[:assignment.committed]):
        found.append(Violation("R-6.1-ASSIGN-ORDER", f"{where} carries committed {assignment.committed} with a "
                               "digest that is not d[n] of the committed output",
                               f"n <= {len(truth)}, d[n] of the counted records",
                               f"committed {assignment.committed}, {short(assignment.digest)}", seq))
    return found


def check_assignments(history: History, facts: Facts, front: FrontSession,
                      log: Sequence[LogRecord]) -> list[Violation]:
    found: list[Violation] = []
    truth = counted(log).tokens
    opens = [seen for seen in history.of(OpenSeen, front.id) if seen.opening is not None and seen.accepted]
    policies = [seen for seen in history.of(PolicySeen, front.id) if seen.accepted and seen.policy is not None]
    for put in history.of(PutSeen, front.id):
        if put.assignment is None:
            continue
        where = f"the PUT …/drafter at {put.verifier}"
        if put.media_type != CBOR or not put.deterministic:
            found.append(Violation("R-5.1-MEDIA-TYPE" if put.media_type != CBOR else "P1-MSG-1/DETERMINISTIC",
                                   f"{where} is labelled {put.media_type!r} / deterministic: {put.deterministic}",
                                   f"{CBOR}, deterministic", put.media_type, put.seq))
        found += _common(put.assignment, facts, front, put.tokens_object, truth, where, put.seq)
        if put.assignment.verifier != facts.verifiers.get(put.verifier):
            found.append(Violation("R-5.2-ASSIGNMENT", f"{where} names verifier {put.assignment.verifier}",
                                   str(facts.verifiers.get(put.verifier)), put.assignment.verifier, put.seq))
    for seen in history.of(AssignSeen, front.id):
        assignment = seen.assignment
        if assignment is None:
            continue
        where = f"the assignment at {seen.drafter} (epoch {assignment.epoch})"
        found += encoding_violations(where, seen.media_type, seen.deterministic, seen.seq)
        found += _common(assignment, facts, front, seen.tokens_object, truth, where, seen.seq)
        if assignment.committed > 0 and assignment.committed_tokens is None:
            # P1-RTR-3: only the assignment the drafter gets must carry them; PUT …/drafter "may omit" them.
            found.append(Violation("P1-RTR-3/ALWAYS-TOKENS", f"{where}: committed {assignment.committed} without "
                                   "committed_tokens", "committed_tokens", "absent", seen.seq))
        found += _order(seen, assignment, where)
        if assignment.drafter != facts.drafters.get(seen.drafter):
            found.append(Violation("R-5.2-ASSIGNMENT", f"{where} names drafter {assignment.drafter}",
                                   str(facts.drafters.get(seen.drafter)), assignment.drafter, seen.seq))
        if not front.is_session_prompt(assignment.prompt):
            found.append(Violation("R-5.2-ASSIGNMENT", f"{where} carries another prompt", str(front.session_prompt),
                                   str(assignment.prompt), seen.seq))
        serving = [o for o in opens if o.seq < seen.seq]
        epoch = max((o.opening.epoch for o in serving if o.opening), default=0)
        current = [o for o in serving if o.opening and o.opening.epoch == epoch]
        if assignment.epoch != epoch:
            found.append(Violation("R-6.9-REASSIGN", f"{where}: the session is at epoch {epoch}",
                                   str(epoch), str(assignment.epoch), seen.seq))
        elif current and assignment.verifier != facts.verifiers.get(current[-1].verifier):
            found.append(Violation("R-5.2-ASSIGNMENT", f"{where} names verifier {assignment.verifier}, not the one "
                                   f"that serves epoch {epoch}", str(facts.verifiers.get(current[-1].verifier)),
                                   assignment.verifier, seen.seq))
        if seen.expired_for is not None and seen.expired_for > facts.expiry_margin_s:
            found.append(Violation("R-6.1-NOT-EXPIRED", f"{where}: the drafter's status had expired "
                                   f"{seen.expired_for:.2f} s earlier", "an unexpired drafter", seen.drafter, seen.seq))
        earlier = [p for p in policies if p.seq < seen.seq]
        if earlier and earlier[-1].policy is not None and assignment.sampling != earlier[-1].policy.sampling:
            found.append(Violation("R-6.6-LATER-ASSIGNMENTS", f"{where} does not carry the accepted sampling "
                                   "profile", str(earlier[-1].policy.sampling.to_obj()),
                                   str(assignment.sampling.to_obj() if assignment.sampling else None), seen.seq))
    return found


def _order(seen: AssignSeen, assignment: Assignment, where: str) -> list[Violation]:
    """§6.1: the verifier was told first; P1-RTR-3: the assignment carries what that PUT returned."""
    put = seen.verifier_put
    told = (put is not None and put.accepted and put.assignment is not None
            and put.assignment.drafter == assignment.drafter and put.assignment.epoch == assignment.epoch)
    if not told or put is None:
        return [Violation("R-6.1-ASSIGN-ORDER", f"{where}: the verifier it names had not been informed of this "
                          "drafter (PUT sessions/{id}/drafter) when the assignment arrived",
                          "PUT …/drafter naming the drafter first", "no such PUT" if put is None else
                          f"the latest PUT named {put.assignment.drafter if put.assignment else '?'}", seen.seq)]
    state = put.state
    if state is not None and (assignment.round, assignment.committed, assignment.digest) != (
            state.round, state.committed, state.digest):
        expected = f"round {state.round}, committed {state.committed}"
        actual = f"round {assignment.round}, committed {assignment.committed}"
        # D-JUDGE-R6: the PUT's session-state is the verifier's current one, so an assignment carrying other
        # values breaks §6.1 ("carrying the current round, committed length, and digest", MUST) as well as
        # P1-RTR-3 — a router that assigns from what it knew before the PUT misleads the drafter.
        return [Violation("P1-RTR-3/ASSIGNMENT-STATE", f"{where} does not carry the session-state the PUT returned",
                          expected, actual, seen.seq),
                Violation("R-6.1-ASSIGN-ORDER", f"{where} does not carry the current round, committed length and "
                          "digest (those the verifier had just answered)", expected, actual, seen.seq)]
    return []


def check_policies(history: History, front: FrontSession) -> list[Violation]:
    """§6.6 "from_round greater than the current round"; P1-RTR-4 "the highest round the router knows + 1"."""
    found: list[Violation] = []
    known = 0
    for seen in sorted([*history.of(PutSeen, front.id), *history.of(OpenSeen, front.id),
                        *history.of(PolicySeen, front.id)], key=lambda item: item.seq):
        if isinstance(seen, PolicySeen) and seen.policy is not None:
            from_round = seen.policy.from_round
            if from_round <= known:
                found.append(Violation("R-6.6-FROM-ROUND", f"a policy with from_round {from_round}, although the "
                                       f"router had been told round {known}", f"from_round > {known}",
                                       str(from_round), seen.seq))
            elif from_round != known + 1:
                found.append(Violation("P1-RTR-4/FROM-ROUND", f"a policy with from_round {from_round}: the highest "
                                       f"round the router knows is {known}", str(known + 1), str(from_round),
                                       seen.seq))
            if seen.round_then is not None and (seen.accepted or seen.status == 409):
                known = max(known, seen.round_then)
        elif isinstance(seen, PutSeen | OpenSeen) and seen.accepted:
            state = seen.state if isinstance(seen, PutSeen) else None
            if state is not None:
                known = max(known, state.round)
            elif isinstance(seen, OpenSeen) and seen.opening is not None and seen.opening.resume is not None:
                known = max(known, seen.opening.resume.round)
    return found


__all__ = ["check_assignments", "check_policies"]
