"""The torch runtime as the reference roles use it: per-session KV caches behind plain token lists.

Callers say "score these tokens after this context"; this layer keeps one KV
cache per session, reuses the longest prefix it already holds (rolling the
cache back after a rejection) and scores every session of a call in one
forward pass. Thread-confined: one caller thread at a time (the verifier's
:class:`~sdcp_conformance.reference.verifier.app.ScoreBatcher` guarantees it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.models.kv_cache import KVCache
from sdcp_conformance.models.runtime import LlamaRuntime
from sdcp_conformance.reference.drafter.drafting import LogitsDraftModel
from sdcp_conformance.reference.verifier.ports import ScoreItem


@dataclass
class _Held:
    cache: KVCache
    tokens: list[int] = field(default_factory=list)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    length = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        length += 1
    return length


class RuntimeModel:
    """A checkpoint on a device, scoring :class:`ScoreItem` batches with cached prefixes."""

    def __init__(self, checkpoint: Checkpoint, runtime: LlamaRuntime) -> None:
        self._runtime = runtime
        self._held: dict[bytes, _Held] = {}
        self.vocab_size = runtime.config.vocab_size
        self.model_sha256 = checkpoint.model_sha256
        self.tokenizer_sha256 = checkpoint.tokenizer_sha256

    @classmethod
    def load(cls, path: Path | str, device: str = "cpu", dtype: torch.dtype = torch.float32) -> RuntimeModel:
        checkpoint = Checkpoint.open(path)
        return cls(checkpoint, LlamaRuntime.load(path, device=device, dtype=dtype))

    def score(self, items: Sequence[ScoreItem]) -> list[npt.NDArray[np.float64]]:
        """Rows after the last context token and after each proposed token, per item."""
        if len({item.session for item in items}) != len(items):
            raise InvalidArgument("one item per session in a scoring pass")
        caches, pendings = [], []
        for item in items:
            held, pending = self._prepare(item)
            caches.append(held.cache)
            pendings.append(pending)
        rows = self._runtime.verify_rows(caches, pendings, [list(item.proposed) for item in items])
        for item in items:
            self._held[item.session].tokens = [*item.context, *item.proposed]
        return [row.to(torch.float64).cpu().numpy() for row in rows]

    def _prepare(self, item: ScoreItem) -> tuple[_Held, list[int]]:
        if not item.context:
            raise InvalidArgument("scoring needs a non-empty context")
        held = self._held.get(item.session)
        if held is None:
            held = self._held[item.session] = _Held(self._runtime.new_cache())
        # Keep at most len(context) - 1 tokens cached: the last context token is
        # fed again so that its row (p[1]) comes out of this pass.
        keep = _common_prefix(held.tokens, item.context[:-1])
        held.cache.truncate(keep)
        del held.tokens[keep:]
        return held, list(item.context[keep:])

    def forget(self, session: bytes) -> None:
        self._held.pop(session, None)




class RuntimeDraftModel(LogitsDraftModel):
    """The drafter's model over the torch runtime, with a KV cache per session.

    Each next-token row comes from :class:`RuntimeModel`, which feeds only the
    tokens its cache does not hold yet; sampling and the published rows are
    :class:`LogitsDraftModel`'s. Calls are serialised by the drafter (its
    model executor of ``draft_concurrency`` 1 threads, D-DRF-19), so the
    current session key is plain state.
    """

    def __init__(self, model: RuntimeModel) -> None:
        super().__init__(
            self._next_logits,
            vocab_size=model.vocab_size,
            model_sha256=model.model_sha256,
            tokenizer_sha256=model.tokenizer_sha256,
        )
        self._model = model
        self._session = b""

    def _begin(self, session_key: bytes) -> None:
        self._session = session_key

    def _next_logits(self, context: Sequence[int]) -> npt.NDArray[np.float64]:
        rows = self._model.score([ScoreItem(self._session, tuple(context), ())])[0]
        return np.asarray(rows[0], dtype=np.float64)

    def forget(self, session_key: bytes) -> None:
        self._model.forget(session_key)


__all__ = ["RuntimeDraftModel", "RuntimeModel"]
