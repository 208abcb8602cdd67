"""The batched Llama runtime that the reference verifier and drafter score tokens with.

Every scoring call feeds, per session, tokens after the session's
:class:`KVCache` and returns one float32 logits row per token fed: row ``j``
holds the logits of the token that follows ``tokens[j]``. The cache then holds
those tokens too, and :meth:`KVCache.truncate` rolls it back.

A verifier gets p[1..M+1] (draft §6.3 "Scoring") from one pass by keeping its
cache one step behind the committed prefix: the cache holds every committed
token except the *pending* ones (at session start, the last prompt token;
after a verdict, the additional token), and it feeds ``pending + proposal``.
The row after the last pending token is p[1], the row after ``x[i]`` is
p[i+1]; see :meth:`LlamaRuntime.verify_rows`. A drafter works the same way
with one token per pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.batch import pack, unpack
from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.models.config import LlamaConfig
from sdcp_conformance.models.kv_cache import KVCache
from sdcp_conformance.models.llama import LlamaWeights, forward
from sdcp_conformance.models.placement import OnDevice


class LlamaRuntime(OnDevice):
    """A Llama model on one device in one dtype, scoring many sessions per forward pass."""

    def __init__(self, weights: LlamaWeights) -> None:
        self.weights = weights

    @classmethod
    def load(
        cls,
        path: Path | str,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> LlamaRuntime:
        """Load a checkpoint folder (config.json + model.safetensors) onto ``device`` as ``dtype``."""
        checkpoint = Checkpoint.open(path)
        return cls.from_tensors(checkpoint.config, checkpoint.tensors(device), device, dtype)

    @classmethod
    def from_tensors(cls, config: LlamaConfig, tensors: dict[str, torch.Tensor], device: torch.device | str = "cpu",
                     dtype: torch.dtype = torch.float32) -> LlamaRuntime:
        """Build from Hugging Face-named tensors held in memory (e.g. a synthetic benchmark model)."""
        return cls(LlamaWeights.from_state_dict(config, tensors, device=device, dtype=dtype))

    @property
    def config(self) -> LlamaConfig:
        return self.weights.config

    def _placed(self) -> torch.Tensor:
        return self.weights.embed

    def new_cache(self) -> KVCache:
        """An empty cache for one session, on this runtime's device and dtype."""
        return KVCache(self.config, device=self.device, dtype=self.dtype)

    def score_batch(
        self, caches: Sequence[KVCache], token_lists: Sequence[Sequence[int]]
    ) -> list[torch.Tensor]:
        """ONE forward pass: feed ``token_lists[b]`` after ``caches[b]`` for every ``b``.

        Returns, per session, a float32 tensor ``[len(token_lists[b]), V]`` on
        this runtime's device; row ``j`` holds the logits after ``token_lists[b][j]``.
        Each cache grows by the tokens fed.
        """
        for cache in caches:
            self._check_cache(cache)
        with torch.inference_mode():
            batch = pack(caches, token_lists, self.config.vocab_size)
            logits, new_kv = forward(self.weights, batch)
            return unpack(caches, [len(t) for t in token_lists], logits, new_kv)

    def extend(self, cache: KVCache, tokens: Sequence[int]) -> torch.Tensor:
        """:meth:`score_batch` for one session: logits rows ``[len(tokens), V]``."""
        return self.score_batch([cache], [tokens])[0]

    def logits(self, tokens: Sequence[int]) -> torch.Tensor:
        """Logits rows for a whole sequence computed from scratch (no cache kept)."""
        return self.extend(self.new_cache(), tokens)

    def verify_rows(
        self,
        caches: Sequence[KVCache],
        pendings: Sequence[Sequence[int]],
        proposals: Sequence[Sequence[int]],
    ) -> list[torch.Tensor]:
        """The target rows p[1..M+1] of every session's proposal, in one pass (draft §6.3).

        ``pendings[b]`` are the committed tokens of session ``b`` that its cache
        does not hold yet (at least one: the last committed token). After the
        call the cache holds the whole prefix and the proposal; on a verdict
        with ``a`` accepted tokens, ``cache.truncate(committed_before + a)``
        keeps the prefix and the accepted tokens, and the additional token
        becomes the next round's pending token. Returns ``[M + 1, V]`` per session.
        """
        if any(not pending for pending in pendings):
            raise InvalidArgument("each session needs at least one pending committed token")
        fed = [list(p) + list(x) for p, x in zip(pendings, proposals, strict=True)]
        rows = self.score_batch(caches, fed)
        return [r[len(p) - 1 :] for r, p in zip(rows, pendings, strict=True)]

    def _check_cache(self, cache: KVCache) -> None:
        if cache.config != self.config or cache.device != self.device or cache.dtype != self.dtype:
            raise InvalidArgument("cache was made for another model, device or dtype")


__all__ = ["LlamaRuntime"]
