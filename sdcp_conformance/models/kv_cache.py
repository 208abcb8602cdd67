"""One session's key/value cache: grows when tokens are scored, truncates on rollback."""

from __future__ import annotations

import torch

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.config import LlamaConfig
from sdcp_conformance.models.placement import OnDevice

INITIAL_CAPACITY = 64
"""Positions allocated at first; capacity doubles when a pass needs more."""


class KVCache(OnDevice):
    """Rotated keys and values of the first :attr:`length` tokens of one session, for every layer.

    Storage is ``[layers, 2, kv_heads, capacity, head_dim]``; positions at or
    beyond :attr:`length` hold stale values that the next write overwrites,
    so :meth:`truncate` (rollback after a rejection) costs nothing.
    """

    def __init__(
        self,
        config: LlamaConfig,
        *,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        capacity: int = INITIAL_CAPACITY,
    ) -> None:
        self._config = config
        self._store = torch.empty(
            (config.num_hidden_layers, 2, config.num_key_value_heads, max(1, capacity),
             config.head_dim),
            device=device, dtype=dtype,
        )
        self._length = 0

    @property
    def length(self) -> int:
        """Tokens whose keys and values are cached; the next token scored sits at this position."""
        return self._length

    @property
    def config(self) -> LlamaConfig:
        return self._config

    def _placed(self) -> torch.Tensor:
        return self._store

    def truncate(self, length: int) -> None:
        """Forget every position from ``length`` on (keep the first ``length`` tokens)."""
        if not 0 <= length <= self._length:
            raise InvalidArgument(f"cannot truncate a cache of {self._length} to {length}")
        self._length = length

    def keys_values(self) -> torch.Tensor:
        """A view ``[layers, 2, kv_heads, length, head_dim]`` of the cached positions."""
        return self._store[:, :, :, : self._length]

    def append(self, new: torch.Tensor) -> None:
        """Store ``new`` (``[layers, 2, kv_heads, T, head_dim]``) at the next ``T`` positions."""
        count = new.shape[3]
        if new.shape[:3] != self._store.shape[:3] or new.shape[4] != self._store.shape[4]:
            raise InvalidArgument(f"keys/values of shape {tuple(new.shape)} do not fit this cache")
        self._reserve(self._length + count)
        self._store[:, :, :, self._length : self._length + count] = new
        self._length += count

    def _reserve(self, needed: int) -> None:
        capacity = self._store.shape[3]
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        grown = self._store.new_empty((*self._store.shape[:3], capacity, self._store.shape[4]))
        grown[:, :, :, : self._length] = self._store[:, :, :, : self._length]
        self._store = grown


__all__ = ["INITIAL_CAPACITY", "KVCache"]
