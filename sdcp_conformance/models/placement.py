"""Where a model object's tensors live: :class:`OnDevice` reads ``device`` and ``dtype`` off one of them."""

from __future__ import annotations

import torch


class OnDevice:
    """``device`` and ``dtype`` of an object whose tensors all share those of one, :meth:`_placed`."""

    def _placed(self) -> torch.Tensor:
        raise NotImplementedError

    @property
    def device(self) -> torch.device:
        return self._placed().device

    @property
    def dtype(self) -> torch.dtype:
        return self._placed().dtype


__all__ = ["OnDevice"]
