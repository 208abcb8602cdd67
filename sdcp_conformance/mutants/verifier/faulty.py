"""Faulty building blocks the mutants use: wrong rules, careless commit-log writers, a leaky KV cache.

Each function or class here reproduces ONE mistake that real inference
engines and log writers have made; everything else in it follows the
reference. The mutants of the wrappers are declared above them; the session mutants use the rules.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

import cbor2
import numpy as np
import numpy.typing as npt

from sdcp_conformance.cache.append import CacheReply, ObjectClient
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.mutants.verifier import CATALOGUE
from sdcp_conformance.protocol.chain import uint32
from sdcp_conformance.protocol.codec import decode_sequence, encode
from sdcp_conformance.protocol.errors import MalformedMessage, ProtocolError
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import PURPOSE_ACCEPT, PURPOSE_DRAW, UniformSource
from sdcp_conformance.protocol.rules import RuleOutcome, residual
from sdcp_conformance.protocol.sampling import draw_token, greedy_token
from sdcp_conformance.reference.links import MlcCache
from sdcp_conformance.reference.scoring import RuntimeModel, _common_prefix, _Held
from sdcp_conformance.reference.verifier.ports import AppendOutcome, Cache, ScoreItem, TargetModel

Rows = npt.NDArray[np.float64]


# ---------------------------------------------------------------------- rule 1


class Rule1Fault(enum.Enum):
    TIES_TO_LARGER_ID = "argmax ties go to the larger id (a reversed or non-stable argmax)"
    BONUS_FROM_P_A = "the additional token is argmax p[a] (rows[a - 1]) instead of p[a+1]"
    EXTRA_POSITION = "the first mismatching position is accepted too (an inclusive bound)"


def _argmax_last(row: Rows) -> int:
    return int(row.size - 1 - np.argmax(row[::-1]))


def faulty_rule1(p_rows: npt.ArrayLike, tokens: Sequence[int], fault: Rule1Fault) -> RuleOutcome:
    """§6.4 rule 1 with one mistake."""
    rows = np.asarray(p_rows, dtype=np.float64)
    best = _argmax_last if fault is Rule1Fault.TIES_TO_LARGER_ID else greedy_token
    accepted = 0
    for row, token in zip(rows, tokens, strict=False):
        if token != best(row):
            if fault is Rule1Fault.EXTRA_POSITION:
                accepted += 1
            break
        accepted += 1
    # With a = 0, rows[a - 1] is rows[-1] in Python: the classic off-by-one lands on p[M+1].
    bonus_row = rows[accepted - 1] if fault is Rule1Fault.BONUS_FROM_P_A else rows[accepted]
    return RuleOutcome(accepted, [*tokens[:accepted], best(bonus_row)])


# ---------------------------------------------------------------------- rule 2


class Rule2Fault(enum.Enum):
    INDEX_OFF_BY_ONE = "HMAC position i is 0-based (0..M-1 and a) instead of 1-based (P1-SAMP-3)"
    PURPOSE_SWAPPED = "purpose 1 for the acceptance test and 0 for the additional token"
    RESIDUAL_FROM_P = "after a rejection the additional token is drawn from p[i], not max(0, p[i] - q[i])"
    ZERO_Q_ACCEPTED = "q[i](x[i]) = 0 is not refused: the ratio is infinite and the token accepted"
    LAZY_Q_CHECK = "q[i](x[i]) = 0 is checked only when position i is reached, after its draw"


def faulty_rule2(p_rows: npt.ArrayLike, q_rows: npt.ArrayLike, tokens: Sequence[int], uniforms: UniformSource,
                 fault: Rule2Fault) -> RuleOutcome:
    """§6.4 rule 2 with one mistake (``q_rows`` are NOT pre-checked for zeros here)."""
    p = np.asarray(p_rows, dtype=np.float64)
    q = np.asarray(q_rows, dtype=np.float64)
    accept_purpose, draw_purpose = PURPOSE_ACCEPT, PURPOSE_DRAW
    if fault is Rule2Fault.PURPOSE_SWAPPED:
        accept_purpose, draw_purpose = PURPOSE_DRAW, PURPOSE_ACCEPT
    shift = -1 if fault is Rule2Fault.INDEX_OFF_BY_ONE else 0
    for i, token in enumerate(tokens, start=1):
        r = uniforms.uniform(i + shift, accept_purpose)
        q_x = q[i - 1, token]
        if q_x <= 0.0 and fault is Rule2Fault.LAZY_Q_CHECK:
            raise ProtocolError(ProblemType.BAD_PROPOSAL, f"q[{i}](x[{i}]) is zero")
        ratio = np.inf if q_x <= 0.0 else p[i - 1, token] / q_x
        if not r < min(1.0, ratio):
            weights = p[i - 1] if fault is Rule2Fault.RESIDUAL_FROM_P else residual(p[i - 1], q[i - 1])
            extra = draw_token(weights, uniforms.uniform(i + shift, draw_purpose))
            return RuleOutcome(i - 1, [*tokens[: i - 1], extra])
    m = len(tokens)
    extra = draw_token(p[m], uniforms.uniform(m + 1 + shift, draw_purpose))
    return RuleOutcome(m, [*tokens, extra])


def lenient_q_rows(blob: bytes, proposed: int, vocab_size: int) -> Rows:
    """q rows checked for size and finiteness (P1-Q-1) but not for q[i](x[i]) = 0."""
    expected = proposed * vocab_size * 4
    if len(blob) != expected:
        raise ProtocolError(ProblemType.BAD_PROPOSAL, f"q_rows holds {len(blob)} octets, expected {expected}")
    rows = np.frombuffer(blob, dtype="<f4").astype(np.float64).reshape(proposed, vocab_size)
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise ProtocolError(ProblemType.BAD_PROPOSAL, "q_rows holds a negative, NaN or infinite value")
    return rows


# ---------------------------------------------------------------------- digests


def little_endian_extend(digest: bytes, tokens: Sequence[int]) -> bytes:
    """d[k] = SHA-256(d[k-1] || o[k]) with o[k] in LITTLE-endian order (§4.2 says network order)."""
    for token in tokens:
        digest = hashlib.sha256(digest + token.to_bytes(4, "little")).digest()
    return digest


def prefix_digest_without_domain(contract_digest: bytes, prompt: Sequence[int]) -> bytes:
    """d[0] without the "SDCP-PREFIX-1" || 0x00 domain separator."""
    body = b"".join(uint32(token) for token in prompt)
    return hashlib.sha256(contract_digest + uint32(len(prompt)) + body).digest()


def raw_member(data: bytes, key: str) -> bytes | None:
    """The encoded bytes of ``key``'s value in a top-level CBOR map, exactly as received."""
    stream = io.BytesIO(data)
    decoder = cbor2.CBORDecoder(stream)
    head = stream.read(1)
    if not head or head[0] >> 5 != 5:
        return None
    count = _argument(head[0] & 0x1F, stream)
    if count is None:
        return None
    for _ in range(count):
        name = decoder.decode()
        start = stream.tell()
        decoder.decode()
        if name == key:
            return data[start:stream.tell()]
    return None


def _argument(info: int, stream: io.BytesIO) -> int | None:
    if info < 24:
        return info
    sizes = {24: 1, 25: 2, 26: 4, 27: 8}
    if info not in sizes:
        return None  # indefinite length: this careless parser gives up
    return int.from_bytes(stream.read(sizes[info]), "big")


# ---------------------------------------------------------------------- commit-log writers


class FenceBlindCache:
    """Appends like the reference but takes a fenced append for a successful one."""

    def __init__(self, inner: Cache) -> None:
        self._inner = inner

    async def get(self, uri: str) -> bytes:
        return await self._inner.get(uri)

    async def append_record(self, log_uri: str, record: Mapping[str, Any], epoch: int) -> AppendOutcome:
        outcome = await self._inner.append_record(log_uri, record, epoch)
        # The bug: only a transport-level failure counts; "fenced" is read as "written".
        return AppendOutcome.APPENDED if outcome is AppendOutcome.FENCED else outcome


MAX_APPEND_TRIES = 32


class CarelessLogCache:
    """A hand-written conditional append (GET, PUT If-Match, retry on 412) with one of two mistakes.

    ``check_fences=False``: it never looks for fence records itself and relies on
    the MLC to refuse a fenced append (no §6.8 read-back). ``drop_epoch=True``: its
    commit records carry no epoch (it still honours fences).
    """

    def __init__(self, inner: Cache, *, check_fences: bool, drop_epoch: bool) -> None:
        if not isinstance(inner, MlcCache):
            raise InvalidArgument("this mutant needs the reference's MLC client")
        self._inner = inner
        self._objects: ObjectClient = inner._objects
        self._check_fences = check_fences
        self._drop_epoch = drop_epoch

    async def get(self, uri: str) -> bytes:
        return await self._inner.get(uri)

    async def append_record(self, log_uri: str, record: Mapping[str, Any], epoch: int) -> AppendOutcome:
        item = dict(record)
        if self._drop_epoch:
            del item["epoch"]
        encoded = encode(item)
        for _ in range(MAX_APPEND_TRIES):
            current = await self._objects.get(log_uri)
            if current.status not in (200, 404):
                return AppendOutcome.FAILED
            data = current.body if current.status == 200 else b""
            if self._check_fences and _fenced(data, epoch):
                return AppendOutcome.FENCED
            reply = await self._put(log_uri, data + encoded, current)
            if reply.status == 412:
                continue
            if reply.status == 409:
                return AppendOutcome.FENCED
            return AppendOutcome.APPENDED if 200 <= reply.status < 300 else AppendOutcome.FAILED
        return AppendOutcome.FAILED

    async def _put(self, uri: str, body: bytes, current: CacheReply) -> CacheReply:
        if current.status == 404 or current.etag is None:
            return await self._objects.put(uri, body, if_none_match="*")
        return await self._objects.put(uri, body, if_match=current.etag)


def _fenced(data: bytes, epoch: int) -> bool:
    """Whether the log holds a fence record (a map with only ``epoch``) above ``epoch``."""
    try:
        items = list(decode_sequence(data))
    except MalformedMessage:
        return False
    return any(isinstance(item, dict) and set(item) == {"epoch"} and item["epoch"] > epoch for item in items)


@CATALOGUE.mutant("ignore-fenced-append", "fencing", "takes a fenced commit-log append for a successful one", "6.3",
                  "If the append fails because the log has been fenced, the verifier MUST discard the round, release "
                  "no output, and stop serving the session.", into="wrap_cache")
def fence_blind(cache: Cache) -> Cache:
    return FenceBlindCache(cache)


@CATALOGUE.mutant("no-read-back", "fencing", "relies on the MLC to refuse fenced appends: never looks for fences "
                  "itself", "6.8", "If the MLC cannot enforce this rule, the verifier MUST read the log after its "
                  "conditional append and treat its append as failed if a fence record with a higher epoch precedes "
                  "its own record.", into="wrap_cache")
def no_read_back(cache: Cache) -> Cache:
    return CarelessLogCache(cache, check_fences=False, drop_epoch=False)


@CATALOGUE.mutant("record-without-epoch", "commit-log", "commit records are appended without their epoch", "6.8",
                  "A commit record appended by a verifier MUST carry the session's current epoch", into="wrap_cache")
def records_without_epoch(cache: Cache) -> Cache:
    return CarelessLogCache(cache, check_fences=True, drop_epoch=True)


class _UnconditionalObjects:
    """An :class:`ObjectClient` that drops If-Match and If-None-Match from every PUT."""

    def __init__(self, inner: ObjectClient) -> None:
        self._inner = inner

    async def get(self, uri: str) -> CacheReply:
        return await self._inner.get(uri)

    async def put(self, uri: str, body: bytes, *, if_match: str | None = None, if_none_match: str | None = None,
                  lease_ms: int | None = None) -> CacheReply:
        del if_match, if_none_match  # the bug
        return await self._inner.put(uri, body, lease_ms=lease_ms)


@CATALOGUE.mutant("unconditional-append", "fencing", "appends to the commit log with plain PUTs (no If-Match): a "
                  "fence written between its read and its write is overwritten", "6.8",
                  "The commit_log is an MLC object to which records are appended with a conditional operation, for "
                  "example an HTTP PUT with If-Match on the current entity tag [RFC9110], so that an append succeeds "
                  "only if no other append has happened since the writer last read the log.", into="wrap_cache")
def unconditional_append(cache: Cache) -> Cache:
    """The reference's append (fence check, read-back and all) with plain PUTs: a fence written between its read
    and its write of the log is overwritten, and the read-back no longer shows it."""
    if not isinstance(cache, MlcCache):
        raise InvalidArgument("this mutant needs the reference's MLC client")
    careless = copy.copy(cache)  # the given cache is left as it was: only the copy's PUTs drop their conditions
    careless._objects = _UnconditionalObjects(cache._objects)
    return careless


# ---------------------------------------------------------------------- the target's KV cache


class StaleKvModel(RuntimeModel):
    """The reference runtime whose KV cache is not rolled back after a rejection.

    It trims its token bookkeeping to the common prefix but forgets
    ``cache.truncate``: the rejected positions' keys and values stay in the
    cache and the next pass appends after them (a bug several engines shipped
    in their first speculative-decoding releases).
    """

    def _prepare(self, item: ScoreItem) -> tuple[_Held, list[int]]:
        held = self._held.get(item.session)
        if held is None:
            held = self._held[item.session] = _Held(self._runtime.new_cache())
        keep = _common_prefix(held.tokens, item.context[:-1])
        del held.tokens[keep:]
        return held, list(item.context[keep:])


@CATALOGUE.mutant("kv-not-rolled-back", "rule-1", "the target's KV cache keeps the rejected positions (scoring "
                  "forgets to truncate it)", "6.4", "The output is identical to greedy decoding of the target model",
                  into="wrap_model")
def stale_kv(model: TargetModel) -> TargetModel:
    """The same loaded model, scoring through :class:`StaleKvModel`."""
    if not isinstance(model, RuntimeModel):
        raise InvalidArgument("this mutant needs the reference's torch runtime")
    clone = StaleKvModel.__new__(StaleKvModel)
    clone.__dict__.update(vars(model))
    return clone


__all__ = [
    "MAX_APPEND_TRIES",
    "CarelessLogCache",
    "FenceBlindCache",
    "Rule1Fault",
    "Rule2Fault",
    "StaleKvModel",
    "faulty_rule1",
    "faulty_rule2",
    "fence_blind",
    "lenient_q_rows",
    "little_endian_extend",
    "no_read_back",
    "prefix_digest_without_domain",
    "raw_member",
    "records_without_epoch",
    "stale_kv",
    "unconditional_append",
]
