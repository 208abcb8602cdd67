"""Packing sessions of different lengths into one padded forward pass, and unpacking the result.

Session ``b`` has ``L[b]`` cached tokens and ``T[b]`` new ones. Cached
keys/values are left-aligned in a ``[.., B, .., max L, ..]`` block and the new
tokens in a ``[B, max T]`` block; the attention mask lets new token ``i`` see
the session's real cached keys (``j < L[b]``) and the new keys ``j' <= i``
(causal). Padded query rows see only padding and real keys, never an empty
set, so no row of softmax is NaN; their outputs are discarded.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.nn.utils.rnn import pad_sequence

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.kv_cache import KVCache
from sdcp_conformance.models.llama import BatchInput

PAD_TOKEN = 0
"""Fills the new-token block of shorter sessions; its outputs are never returned."""


def pack(
    caches: Sequence[KVCache], token_lists: Sequence[Sequence[int]], vocab_size: int
) -> BatchInput:
    """The :class:`BatchInput` that scores ``token_lists[b]`` after ``caches[b]``."""
    _check(caches, token_lists, vocab_size)
    device = caches[0].device
    lengths = torch.tensor([c.length for c in caches], device=device)
    counts = [len(t) for t in token_lists]
    max_past, max_new = int(lengths.max()), max(counts)
    tokens = torch.full((len(caches), max_new), PAD_TOKEN, dtype=torch.int64)
    for b, row in enumerate(token_lists):
        tokens[b, : len(row)] = torch.tensor(list(row), dtype=torch.int64)
    steps = torch.arange(max_new, device=device)
    return BatchInput(
        tokens=tokens.to(device),
        positions=lengths[:, None] + steps[None, :],
        past=_gather_past(caches, max_past),
        mask=_mask(lengths, max_past, max_new),
    )


def unpack(
    caches: Sequence[KVCache], counts: Sequence[int], logits: torch.Tensor, new_kv: torch.Tensor
) -> list[torch.Tensor]:
    """Append each session's new keys/values to its cache; return its logits rows ``[T[b], V]``."""
    rows = []
    for b, (cache, count) in enumerate(zip(caches, counts, strict=True)):
        cache.append(new_kv[:, :, b, :, :count])
        rows.append(logits[b, :count])
    return rows


def _check(
    caches: Sequence[KVCache], token_lists: Sequence[Sequence[int]], vocab_size: int
) -> None:
    if not caches or len(caches) != len(token_lists):
        raise InvalidArgument("need one non-empty token list per cache, and at least one cache")
    if len({id(c) for c in caches}) != len(caches):
        raise InvalidArgument("a cache appears twice in one batch")
    for row in token_lists:
        if not row:
            raise InvalidArgument("every session must score at least one token")
        if any(not 0 <= t < vocab_size for t in row):
            raise InvalidArgument(f"token outside the vocabulary of {vocab_size}: {list(row)}")


def _gather_past(caches: Sequence[KVCache], max_past: int) -> torch.Tensor | None:
    """``[layers, 2, B, kv_heads, max_past, head_dim]``, zero beyond each session's length."""
    if max_past == 0:
        return None
    # pad_sequence pads along the first dimension, so put the position axis first.
    views = [cache.keys_values().movedim(3, 0) for cache in caches]
    padded = pad_sequence(views, batch_first=True)
    return padded.permute(2, 3, 0, 4, 1, 5)


def _mask(lengths: torch.Tensor, max_past: int, max_new: int) -> torch.Tensor:
    device = lengths.device
    past_ok = torch.arange(max_past, device=device)[None, :] < lengths[:, None]
    steps = torch.arange(max_new, device=device)
    causal = steps[None, :] <= steps[:, None]
    batch = lengths.shape[0]
    mask = torch.cat(
        (past_ok[:, None, :].expand(batch, max_new, max_past),
         causal[None].expand(batch, max_new, max_new)),
        dim=2,
    )
    return mask[:, None]


__all__ = ["PAD_TOKEN", "pack", "unpack"]
