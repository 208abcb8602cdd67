"""Session Contract validation and the contract digest (§4.1, §6.1, P1-MSG-1, P1-MSG-2, P1-CTL-4, P1-SES-1).

Each CDDL constraint of the contract is violated once in an otherwise valid
session-open. Table 2 names the refusal of an invalid contract (422
sdcp-bad-contract), so accepting it and refusing it with another status or
type are both FAILED (P1-JUDGE-1); only where the profile alone decides (m_max
0, P1-CTL-4) or a SHOULD does (the tokenizer, P1-SES-1) is a deviation
NON-STRICT. A refused open must not leave a session behind: the same id then
opens with a valid contract. The digest cases send one contract in
non-deterministic encodings and require d[0] over the harness's own
deterministic re-encoding.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from sdcp_conformance.harness.case import Level
from sdcp_conformance.harness.contexts.verifier import TrackedSession, VerifierContext
from sdcp_conformance.protocol.codec import encode
from sdcp_conformance.protocol.messages import SessionState
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.suites.verifier import CATALOGUE

VALIDATES = "The verifier validates the contract"
TABLE2 = "sdcp-bad-contract 422 Contract invalid or not supported"
CONTRACT_422 = "except the contract, which gets 422 `sdcp-bad-contract`"
LADDER_ONLY = "The fallback list MUST contain only the actions reduce, switch, self_decode, and fail"
UNKNOWN_KEY = ('A contract that contains a key not defined by this document MUST be rejected with problem type '
               '"sdcp-bad-contract", so that all parties compute the contract digest over the same content.')
NOT_A_MODEL = hashlib.sha256(b"SDCP conformance: a model no verifier serves").digest()

Mutation = Callable[[dict[str, Any]], None]


def _setter(**values: Any) -> Mutation:
    def mutate(contract: dict[str, Any]) -> None:
        contract.update(values)

    return mutate


def _sampling(**values: Any) -> Mutation:
    def mutate(contract: dict[str, Any]) -> None:
        contract["sampling"] = {"temperature_milli": 0, **values}

    return mutate


def _without(member: str) -> Mutation:
    def mutate(contract: dict[str, Any]) -> None:
        del contract[member]

    return mutate


VALIDATES_ROW = "R-6.1-VALIDATES"


async def _open_refused_contract(ctx: VerifierContext, mutate: Mutation, what: str) -> None:
    """Open a session whose contract ``mutate`` made invalid; it must be refused and leave nothing behind."""
    contract = ctx.contract()
    mutate(contract)
    session = ctx.track(contract=contract)
    answer = await ctx.open(session, deliberate=True)
    ctx.expect_refusal(answer, ctx.case.primary_row, what=f"a session-open whose contract has {what}")
    if not answer.ok:
        await _nothing_left_behind(ctx, session)


async def _nothing_left_behind(ctx: VerifierContext, refused: TrackedSession) -> None:
    """The refused session id is still free: opening it with a valid contract gives round 0 and its d[0]."""
    refused.contract = ctx.contract()
    answer = await ctx.open(refused)
    state = ctx.expect_ok(answer, SessionState, what="POST sessions with the refused id and a valid contract",
                          row="R-6.1-OPEN")
    ctx.check_state(refused, state, "POST sessions after a refused open")
    ctx.check(state.round == 0, f"the re-opened session is at round {state.round}, not 0", row="R-6.1-OPEN")


def _refusal_case(case_id: str, title: str, mutate: Mutation, what: str, *, quote: str | None = None,
                  level: Level = Level.MUST, profile: tuple[str, ...] = ("P1-MSG-2",),
                  row: str = VALIDATES_ROW) -> None:
    async def run(ctx: VerifierContext) -> None:
        await _open_refused_contract(ctx, mutate, what)

    CATALOGUE.case(case_id, area="contract", section="4.1, 6.1", quote=quote, level=level, title=title,
                   profile=profile, rows=(row, "R-6.1-OPEN"))(run)


_CDDL_CASES: list[tuple[str, str, str, Mutation, str]] = [
    ("001", "m_max 65 is refused", "m_max: uint .le 64", _setter(m_max=65), "m_max 65"),
    ("002", "low_ratio 101 is refused", "? low_ratio: uint .le 100", _setter(low_ratio=101), "low_ratio 101"),
    ("003", "self_load 101 is refused", "? self_load: uint .le 100", _setter(self_load=101), "self_load 101"),
    ("004", "low_rounds 0 is refused", "low_rounds: uint .ge 1", _setter(low_rounds=0), "low_rounds 0"),
    ("005", "a drafters entry of 31 octets is refused", "? drafters: [+ hash32], ; permitted draft models ... "
     "hash32 = bstr .size 32", _setter(drafters=[bytes(31)]), "a 31-octet drafters entry"),
    ("006", "a target of 33 octets is refused", "target: hash32, ; SHA-256 of target model weights ... "
     "hash32 = bstr .size 32", _setter(target=bytes(33)), "a 33-octet target"),
    ("007", "a scope of 15 octets is refused", "? scope: bstr .size 16 ; KVSP Scope ID of cache objects",
     _setter(scope=bytes(15)), "a 15-octet scope"),
    ("011", "an empty fallback list is refused", "fallback: [+ ladder], ; escalation ladder",
     _setter(fallback=[]), "an empty fallback list"),
    ("012", "an empty drafters list is refused", "? drafters: [+ hash32], ; permitted draft models",
     _setter(drafters=[]), "an empty drafters list"),
    ("015", "an unregistered acceptance rule is refused", "rule: uint, ; acceptance rule (registry), fixed ... "
     "Rules are registered (Section 10.2.2). This document defines two.", _setter(rule=7), "rule 7"),
    ("026", "rule 3, the first number after the two registered rules, is refused", "rule: uint, ; acceptance rule "
     "(registry), fixed ... Rules are registered (Section 10.2.2). This document defines two.", _setter(rule=3),
     "rule 3"),
    ("027", "rule 0, below the registered rules, is refused", "rule: uint, ; acceptance rule (registry), fixed ... "
     "Rules are registered (Section 10.2.2). This document defines two.", _setter(rule=0), "rule 0"),
    ("020", "a member of the wrong type is refused", "max_new: uint, ; maximum output tokens",
     _setter(max_new="64"), "max_new as a text string"),
    ("021", "a missing required member is refused", "low_rounds: uint .ge 1, ; R, escalation period",
     _without("low_rounds"), "no low_rounds member"),
    ("022", "top_p_milli 1001 inside the contract's sampling is refused", "? top_p_milli: uint .le 1000",
     _sampling(top_p_milli=1001), "sampling.top_p_milli 1001"),
]

for _number, _title, _cddl, _mutate, _what in _CDDL_CASES:
    _refusal_case(f"VER-4.1-CONTRACT-{_number}", _title, _mutate, _what,
                  quote=f"{VALIDATES} ... {_cddl} ... {TABLE2} ... {CONTRACT_422}")

for _number, _entry in (("008", 0), ("009", 4)):
    _refusal_case(f"VER-4.1-CONTRACT-{_number}", f"a fallback entry {_entry} (not a ladder action) is refused",
                  _setter(fallback=[1, _entry]), f"fallback entry {_entry}", row="R-6.5.2-LADDER",
                  quote=f"{LADDER_ONLY} ... ladder = a-reduce / a-switch / a-self-decode / a-fail ... {TABLE2}")

_refusal_case("VER-4.1-CONTRACT-013", "a contract with an unknown key is refused with sdcp-bad-contract",
              _setter(priority=1), "the unknown key 'priority'", profile=(), row="R-4.1-UNKNOWN-KEY")
_refusal_case("VER-4.1-CONTRACT-014", "an unknown key inside the contract's sampling is refused",
              _sampling(beam_width=4), "the unknown key 'beam_width' inside its sampling", profile=(),
              row="R-4.1-UNKNOWN-KEY",
              quote=f"{UNKNOWN_KEY} ... Unknown map keys MUST be ignored, except in the contract (Section 4.1).")
_refusal_case("VER-4.1-CONTRACT-016", "m_max 0 is refused (profile)",
              _setter(m_max=0), "m_max 0", level=Level.PROFILE, profile=("P1-CTL-4",), row="P1-CTL-4/M-MAX-ZERO")
_refusal_case("VER-4.1-CONTRACT-017", "a contract whose target is not the verifier's model is refused",
              _setter(target=NOT_A_MODEL), "a target digest of no model it serves", profile=(), row="R-6.1-TARGET")
_refusal_case("VER-4.1-CONTRACT-018", "a contract naming another tokenizer is refused (SHOULD)",
              _setter(tokenizer=NOT_A_MODEL), "a tokenizer digest that is not its tokenizer's", level=Level.SHOULD,
              profile=("P1-SES-1",), row="P1-SES-1/TOKENIZER")


@CATALOGUE.case(
    "VER-4.1-CONTRACT-010", area="contract", section="4.1, 5.2, 6.5.2",
    quote=f"{LADDER_ONLY} ... A receiver that encounters an unknown action value MUST treat it as \"fail\".",
    level=Level.MUST, rows=("R-6.5.2-LADDER", "R-5.2-UNKNOWN-ACTION", "R-6.1-OPEN"),
    black_box_note="The draft allows two readings of an unknown ladder value: the CDDL (ladder) excludes it, so the "
                   "contract is invalid; §5.2 has a receiver treat an unknown action as fail. Both are accepted: "
                   "422 sdcp-bad-contract, or an open session whose d[0] covers the contract as sent.",
)
async def unknown_fallback_action(ctx: VerifierContext) -> None:
    """A fallback entry 9 (no action) is refused as a bad contract, or accepted (read as fail) with the right d[0]."""
    contract = ctx.contract(fallback=[1, 9])
    session = ctx.track(contract=contract)
    answer = await ctx.open(session, deliberate=True)  # 9 is no ladder action: not a contract of sdcp.cddl
    if answer.ok:
        ctx.note("the IUT accepted fallback entry 9, reading it as fail (§5.2)")
        ctx.check_state(session, ctx.expect_ok(answer, SessionState, what="POST sessions"), "POST sessions")
        return
    ctx.expect_refusal(answer, "R-6.5.2-LADDER", what="a contract with fallback entry 9")
    await _nothing_left_behind(ctx, session)


@CATALOGUE.case(
    "VER-4.1-CONTRACT-019", area="contract", section="4.1",
    quote="m_max: uint .le 64 ... ? low_ratio: uint .le 100 ... ? self_load: uint .le 100 ... The contract digest is "
          "the SHA-256 of the contract encoded with the core deterministic encoding",
    level=Level.MUST, rows=("R-6.1-OPEN", "R-4.1-DIGEST"),
)
async def boundary_values_accepted(ctx: VerifierContext) -> None:
    """A contract using every optional member at its CDDL bounds opens with the d[0] of that contract."""
    info = ctx.mock()
    contract = ctx.contract(
        m_max=64, low_ratio=100, self_load=100, self_max=0, low_rounds=1, fallback=[1, 2, 3, 5],
        drafters=[info.model_sha256], scope=bytes(range(16)), stop=[2, 127], max_new=0xFFFFFFFF,
        sampling={"temperature_milli": 0, "top_k": 0, "top_p_milli": 1000, "seed": 2**64 - 1},
    )
    session = ctx.track(contract=contract)
    answer = await ctx.open(session)
    if answer.status == 422 and answer.problem_type is ProblemType.BAD_CONTRACT:
        ctx.informational("the IUT refused a valid contract as not supported (Table 2 allows 'Contract invalid or "
                          "not supported')")
        return
    state = ctx.expect_ok(answer, SessionState, what="POST sessions", row="R-6.1-OPEN")
    ctx.check_state(session, state, "POST sessions")


# ---------------------------------------------------------------------- non-deterministic encodings


def _head(major: int, argument: int, wide: bool) -> bytes:
    """A CBOR head; ``wide`` uses the 8-octet argument form whatever the value (not preferred serialization)."""
    if wide:
        return bytes([major << 5 | 27]) + argument.to_bytes(8, "big")
    return _short_head(major, argument)


def _short_head(major: int, argument: int) -> bytes:
    if argument < 24:
        return bytes([major << 5 | argument])
    for additional, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if argument < 1 << (8 * width):
            return bytes([major << 5 | additional]) + argument.to_bytes(width, "big")
    raise ValueError(f"{argument} does not fit a CBOR head")


def loose_encode(obj: Any, *, indefinite: bool = False, reverse: bool = False, wide: bool = False) -> bytes:
    """Well-formed but non-deterministic CBOR (RFC 8949 §4.2.1 broken on purpose).

    ``indefinite``: maps, arrays and byte/text strings use indefinite lengths
    (strings as two chunks); ``reverse``: map keys in the reverse of the
    deterministic order; ``wide``: every integer and length in 8 octets.
    """
    def again(item: Any) -> bytes:
        return loose_encode(item, indefinite=indefinite, reverse=reverse, wide=wide)

    if isinstance(obj, bool):
        return b"\xf5" if obj else b"\xf4"
    if isinstance(obj, int):
        return _head(0, obj, wide) if obj >= 0 else _head(1, -1 - obj, wide)
    if isinstance(obj, (bytes, str)):
        major, raw = (2, obj) if isinstance(obj, bytes) else (3, obj.encode())
        if indefinite and len(raw) > 1:
            middle = len(raw) // 2 if isinstance(obj, bytes) else len(obj[: len(obj) // 2].encode())
            chunks = (raw[:middle], raw[middle:])
            return bytes([major << 5 | 31]) + b"".join(_head(major, len(c), wide) + c for c in chunks) + b"\xff"
        return _head(major, len(raw), wide) + raw
    if isinstance(obj, (list, tuple)):
        items = b"".join(again(item) for item in obj)
        return b"\x9f" + items + b"\xff" if indefinite else _head(4, len(obj), wide) + items
    if isinstance(obj, Mapping):
        pairs = sorted(obj.items(), key=lambda pair: encode(pair[0]), reverse=reverse)
        body = b"".join(again(key) + again(value) for key, value in pairs)
        return b"\xbf" + body + b"\xff" if indefinite else _head(5, len(obj), wide) + body
    raise TypeError(f"cannot encode {type(obj).__name__}")


async def _open_loosely(ctx: VerifierContext, **style: bool) -> None:
    info = ctx.mock()
    contract = ctx.contract(drafters=[info.model_sha256], low_ratio=50, scope=bytes(range(16)), stop=[2, 100],
                            max_new=1000, sampling={"temperature_milli": 0, "top_k": 40, "seed": 70000})
    session = ctx.track(contract=contract, prompt=(5, 9, 14, 120, 3))
    body = loose_encode(ctx.opening(session), **style)
    ctx.require(body != encode(ctx.opening(session)), "harness error: the loose encoding is deterministic")
    answer = await ctx.iut.send("router", "POST", "sessions", body)
    if not answer.ok and answer.status is not None and 400 <= answer.status < 500:
        ctx.deviate("P1-MSG-1/ANY-ENCODING", f"the IUT refused a well-formed but non-deterministically encoded "
                    f"session-open ({answer.describe()}); P1-MSG-1: receivers accept any well-formed encoding",
                    expected=["2xx session-state"], actual=answer.describe())
        return
    state = ctx.expect_ok(answer, SessionState, what="POST sessions (non-deterministic encoding)")
    ctx.require(state.digest == session.d0,
                "d[0] is not computed over the deterministic re-encoding of the contract (§4.1, P1-MSG-1)",
                row="R-4.1-DIGEST", expected=session.d0.hex(), actual=state.digest.hex())
    ctx.check_state(session, state, "POST sessions (non-deterministic encoding)")


_DIGEST_QUOTE = ("The contract digest is the SHA-256 of the contract encoded with the core deterministic encoding of "
                 "Section 4.2.1 of [RFC8949] ... receivers accept any well-formed encoding, and compute the contract "
                 "digest over their own deterministic re-encoding of the decoded contract.")


@CATALOGUE.case("VER-4.1-CONTRACT-023", area="contract", section="4.1", quote=_DIGEST_QUOTE, level=Level.MUST,
                profile=("P1-MSG-1",), rows=("R-4.1-DIGEST", "P1-MSG-1/ANY-ENCODING"))
async def digest_over_indefinite_lengths(ctx: VerifierContext) -> None:
    """A session-open with indefinite-length maps, arrays and chunked strings gets the deterministic d[0]."""
    await _open_loosely(ctx, indefinite=True)


@CATALOGUE.case("VER-4.1-CONTRACT-024", area="contract", section="4.1", quote=_DIGEST_QUOTE, level=Level.MUST,
                profile=("P1-MSG-1",), rows=("R-4.1-DIGEST", "P1-MSG-1/ANY-ENCODING"))
async def digest_over_reordered_keys(ctx: VerifierContext) -> None:
    """A session-open whose map keys are in reverse order gets the deterministic d[0]."""
    await _open_loosely(ctx, reverse=True)


@CATALOGUE.case("VER-4.1-CONTRACT-025", area="contract", section="4.1", quote=_DIGEST_QUOTE, level=Level.MUST,
                profile=("P1-MSG-1",), rows=("R-4.1-DIGEST", "P1-MSG-1/ANY-ENCODING"))
async def digest_over_wide_integers(ctx: VerifierContext) -> None:
    """A session-open whose integers and lengths all use 8-octet arguments gets the deterministic d[0]."""
    await _open_loosely(ctx, wide=True)
