"""Typed SDCP messages (draft §4.1, §5.2) with ``from_cbor`` / ``to_cbor``.

Each message is a frozen dataclass whose members carry their CDDL type in the
field metadata. Decoding enforces required members, types and ranges; unknown
keys are ignored ("Unknown map keys MUST be ignored, except in the contract",
§5.2) except in the contract, where they are rejected (§4.1 "A contract that
contains a key not defined by this document MUST be rejected with problem type
sdcp-bad-contract"). Unknown action values read as ``fail`` (§5.2).

Which problem type a malformed message gets (P1-MSG-2): 400
``sdcp-bad-message``, except anything wrong inside the contract, which gets
422 ``sdcp-bad-contract``. D-MSG-1: when both are wrong, the members outside
the contract are checked first, so the envelope's 400 wins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from sdcp_conformance.protocol import fields as f
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.errors import MalformedMessage
from sdcp_conformance.protocol.problems import ProblemType

LADDER_ACTIONS = (Action.REDUCE, Action.SWITCH, Action.SELF_DECODE, Action.FAIL)
"""§4.1: ladder = a-reduce / a-switch / a-self-decode / a-fail."""

ROLE_DRAFTER = 1
ROLE_VERIFIER = 2


def _member(kind: f.Field, *, optional: bool = False, wire: str | None = None) -> Any:
    """A message member of CDDL type ``kind``; ``wire`` names it on the wire if it differs."""
    metadata: dict[str, Any] = {"kind": kind, "wire": wire}
    if optional:
        return field(default=None, metadata=metadata)
    return field(metadata=metadata)


def _action_field() -> f.Field:
    """§5.2: "A receiver that encounters an unknown action value MUST treat it as fail"."""
    check = f.uint()

    def parse(value: Any, path: str) -> Action:
        return Action.parse(check.parse(value, path))

    return f.Field("action", parse, int)


def _ladder_field() -> f.Field:
    check = f.uint(one_of=[int(action) for action in LADDER_ACTIONS])

    def parse(value: Any, path: str) -> Action:
        return Action(check.parse(value, path))

    return f.Field("ladder", parse, int)


def _nested(message_type: type[Message], *, closed: bool | None = None) -> f.Field:
    def parse(value: Any, path: str) -> Message:
        return message_type.from_obj(value, closed=closed, path=path)

    return f.Field(message_type.__name__, parse, lambda message: message.to_obj())


HASH32 = f.bstr(size=32)
SESSION_ID = f.bstr(size=16)
CACHE_REF = f.tstr()
UINTS = f.array(f.uint())
TOKENS_OR_REF = f.choice(UINTS, CACHE_REF)


@dataclass(frozen=True)
class Message:
    """Base of every typed message: CDDL-checked conversion to and from CBOR."""

    CLOSED: ClassVar[bool] = False
    PROBLEM: ClassVar[ProblemType] = ProblemType.BAD_MESSAGE

    @classmethod
    def from_cbor(cls, data: bytes) -> Self:
        return cls.from_obj(decode(data))

    @classmethod
    def from_obj(cls, obj: Any, *, closed: bool | None = None, path: str = "") -> Self:
        closed = cls.CLOSED if closed is None else closed
        label = path or cls.__name__
        if not isinstance(obj, Mapping):
            raise MalformedMessage(f"{label}: expected a map", problem=cls.PROBLEM)
        members = {_wire(m): m for m in dataclasses.fields(cls)}
        if closed:
            unknown = [key for key in obj if key not in members]
            if unknown:
                raise MalformedMessage(f"{label}: unknown keys {unknown!r}", problem=cls.PROBLEM)
        values: dict[str, Any] = {}
        # D-MSG-1: nested strict (contract) members last, so envelope errors come first.
        ordered = sorted(members.values(), key=lambda m: _kind(m).name == "Contract")
        for member in ordered:
            values[member.name] = cls._parse_member(obj, member, label)
        return cls(**values)

    @classmethod
    def _parse_member(cls, obj: Mapping[Any, Any], member: dataclasses.Field[Any], label: str) -> Any:
        name = _wire(member)
        path = f"{label}.{name}"
        if name not in obj:
            if member.default is None:
                return None
            raise MalformedMessage(f"{path}: required member missing", problem=cls.PROBLEM)
        try:
            return _kind(member).parse(obj[name], path)
        except f.FieldError as exc:
            raise MalformedMessage(str(exc), problem=cls.PROBLEM) from None

    def to_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for member in dataclasses.fields(self):
            value = getattr(self, member.name)
            if value is not None:
                obj[_wire(member)] = _kind(member).dump(value)
        return obj

    def to_cbor(self) -> bytes:
        return encode(self.to_obj())

    def replace(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)


def _wire(member: dataclasses.Field[Any]) -> str:
    return member.metadata["wire"] or member.name


def _kind(member: dataclasses.Field[Any]) -> f.Field:
    kind = member.metadata["kind"]
    assert isinstance(kind, f.Field)
    return kind


@dataclass(frozen=True)
class Sampling(Message):
    """§4.1 sampling. Open, except inside a contract (D-MSG-2)."""

    temperature_milli: int | None = _member(f.uint(), optional=True)
    top_k: int | None = _member(f.uint(), optional=True)
    top_p_milli: int | None = _member(f.uint(le=1000), optional=True)
    seed: int | None = _member(f.uint(), optional=True)


@dataclass(frozen=True)
class Contract(Message):
    """§4.1 Session Contract. Closed: unknown keys are ``sdcp-bad-contract``.

    D-MSG-2: a ``sampling`` map inside a contract is closed too — the
    contract digest covers it, and §4.1 rejects any key "not defined by this
    document" that a contract contains.
    """

    CLOSED: ClassVar[bool] = True
    PROBLEM: ClassVar[ProblemType] = ProblemType.BAD_CONTRACT

    target: bytes = _member(HASH32)
    tokenizer: bytes = _member(HASH32)
    rule: int = _member(f.uint())
    m_max: int = _member(f.uint(le=64))
    max_new: int = _member(f.uint())
    stop: tuple[int, ...] = _member(UINTS)
    low_rounds: int = _member(f.uint(ge=1))
    fallback: tuple[Action, ...] = _member(f.array(_ladder_field(), min_items=1))
    drafters: tuple[bytes, ...] | None = _member(f.array(HASH32, min_items=1), optional=True)
    sampling: Sampling | None = _member(_nested(Sampling, closed=True), optional=True)
    low_ratio: int | None = _member(f.uint(le=100), optional=True)
    self_load: int | None = _member(f.uint(le=100), optional=True)
    self_max: int | None = _member(f.uint(), optional=True)
    scope: bytes | None = _member(f.bstr(size=16), optional=True)

    @classmethod
    def from_obj(cls, obj: Any, *, closed: bool | None = None, path: str = "") -> Self:
        try:
            return super().from_obj(obj, closed=closed, path=path)
        except MalformedMessage as exc:
            if exc.problem is ProblemType.BAD_CONTRACT:
                raise
            # A malformed sampling map inside the contract is a malformed contract.
            raise MalformedMessage(exc.detail, problem=ProblemType.BAD_CONTRACT) from None


CONTRACT = _nested(Contract)


@dataclass(frozen=True)
class Resume(Message):
    """§5.2 session-open.resume, present on failover (§6.9)."""

    round: int = _member(f.uint())
    committed: int = _member(f.uint())
    digest: bytes = _member(HASH32)
    committed_tokens: str = _member(CACHE_REF)
    target_kv: str | None = _member(CACHE_REF, optional=True)


@dataclass(frozen=True)
class SessionOpen(Message):
    session: bytes = _member(SESSION_ID)
    epoch: int = _member(f.uint())
    contract: Contract = _member(CONTRACT)
    prompt: tuple[int, ...] | str = _member(TOKENS_OR_REF)
    commit_log: str = _member(CACHE_REF)
    prompt_kv: str | None = _member(CACHE_REF, optional=True)
    resume: Resume | None = _member(_nested(Resume), optional=True)


@dataclass(frozen=True)
class SessionState(Message):
    session: bytes = _member(SESSION_ID)
    epoch: int = _member(f.uint())
    round: int = _member(f.uint())
    committed: int = _member(f.uint())
    digest: bytes = _member(HASH32)
    state: int | None = _member(f.uint(), optional=True)


@dataclass(frozen=True)
class Assignment(Message):
    session: bytes = _member(SESSION_ID)
    epoch: int = _member(f.uint())
    contract: Contract = _member(CONTRACT)
    verifier: str = _member(f.tstr())
    drafter: str = _member(f.tstr())
    prompt: tuple[int, ...] | str = _member(TOKENS_OR_REF)
    round: int = _member(f.uint())
    committed: int = _member(f.uint())
    digest: bytes = _member(HASH32)
    m_init: int = _member(f.uint())
    sampling: Sampling | None = _member(_nested(Sampling), optional=True)
    committed_tokens: str | None = _member(CACHE_REF, optional=True)


@dataclass(frozen=True)
class Status(Message):
    instance: str = _member(f.tstr())
    role: int = _member(f.uint(one_of=(ROLE_DRAFTER, ROLE_VERIFIER)))
    load: int = _member(f.uint(le=100))
    queue: int = _member(f.uint())
    ttl_ms: int = _member(f.uint())
    accept_milli: int | None = _member(f.uint(le=1000), optional=True)
    cache_mbps: int | None = _member(f.uint(), optional=True)


@dataclass(frozen=True)
class Proposal(Message):
    session: bytes = _member(SESSION_ID)
    epoch: int = _member(f.uint())
    round: int = _member(f.uint())
    drafter: str = _member(f.tstr())
    base: int = _member(f.uint())
    base_digest: bytes = _member(HASH32)
    tokens: tuple[int, ...] = _member(f.array(f.uint(), min_items=1))
    status: Status = _member(_nested(Status))
    q_rows: str | None = _member(CACHE_REF, optional=True)
    draft_kv: str | None = _member(CACHE_REF, optional=True)

    def identity_key(self) -> bytes:
        """P1-IDEM-1: "Identical" proposals are equal in every member except status."""
        obj = self.to_obj()
        del obj["status"]
        return encode(obj)


@dataclass(frozen=True)
class Verdict(Message):
    session: bytes = _member(SESSION_ID)
    epoch: int = _member(f.uint())
    round: int = _member(f.uint())
    accepted: int = _member(f.uint())
    emitted: tuple[int, ...] = _member(UINTS)
    committed: int = _member(f.uint())
    digest: bytes = _member(HASH32)
    action: Action = _member(_action_field())
    m_cap: int = _member(f.uint())
    low: int = _member(f.uint())
    load: int = _member(f.uint(le=100))


@dataclass(frozen=True)
class Output(Message):
    session: bytes = _member(SESSION_ID)
    epoch: int = _member(f.uint())
    tokens: tuple[int, ...] = _member(UINTS)
    final: bool = _member(f.boolean())
    from_: int = _member(f.uint(), wire="from")  # "from" is a Python keyword
    finish: Action | None = _member(_action_field(), optional=True)


@dataclass(frozen=True)
class Event(Message):
    session: bytes = _member(SESSION_ID)
    epoch: int = _member(f.uint())
    kind: Action = _member(_action_field())
    committed: int = _member(f.uint())
    digest: bytes = _member(HASH32)


@dataclass(frozen=True)
class Policy(Message):
    session: bytes = _member(SESSION_ID)
    from_round: int = _member(f.uint())
    sampling: Sampling = _member(_nested(Sampling))


MESSAGE_TYPES: dict[str, type[Message]] = {
    "contract": Contract,
    "sampling": Sampling,
    "session-open": SessionOpen,
    "session-state": SessionState,
    "assignment": Assignment,
    "proposal": Proposal,
    "verdict": Verdict,
    "output": Output,
    "status": Status,
    "event": Event,
    "policy": Policy,
}
"""CDDL rule name → typed message."""

__all__ = [
    "LADDER_ACTIONS",
    "MESSAGE_TYPES",
    "ROLE_DRAFTER",
    "ROLE_VERIFIER",
    "Assignment",
    "Contract",
    "Event",
    "Message",
    "Output",
    "Policy",
    "Proposal",
    "Resume",
    "Sampling",
    "SessionOpen",
    "SessionState",
    "Status",
    "Verdict",
]
