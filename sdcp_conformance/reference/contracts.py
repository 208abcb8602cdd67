"""Session contracts for the reference stack's own sessions (``generate``, end-to-end tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.protocol.control import Action

DEFAULT_FALLBACK = (Action.REDUCE, Action.SWITCH, Action.SELF_DECODE, Action.FAIL)


def stack_contract(
    target: Checkpoint,
    drafters: Sequence[Checkpoint] = (),
    *,
    rule: int = 1,
    max_new: int = 32,
    m_max: int = 8,
    stop: Sequence[int] = (),
    temperature_milli: int | None = None,
    top_k: int | None = None,
    top_p_milli: int | None = None,
    seed: int | None = None,
    low_rounds: int = 3,
    low_ratio: int | None = None,
    fallback: Sequence[Action] = DEFAULT_FALLBACK,
    self_load: int | None = 50,
    self_max: int | None = 8,
) -> dict[str, Any]:
    """A §4.1 contract over the checkpoints' P1-HASH-1 digests, with absent members left out."""
    sampling = {
        key: value
        for key, value in (("temperature_milli", temperature_milli), ("top_k", top_k),
                           ("top_p_milli", top_p_milli), ("seed", seed))
        if value is not None
    }
    contract: dict[str, Any] = {
        "target": target.model_sha256, "tokenizer": target.tokenizer_sha256, "rule": rule, "m_max": m_max,
        "max_new": max_new, "stop": list(stop), "low_rounds": low_rounds, "fallback": [int(a) for a in fallback],
    }
    optional = {"drafters": [d.model_sha256 for d in drafters] or None, "sampling": sampling or None,
                "low_ratio": low_ratio, "self_load": self_load, "self_max": self_max}
    contract.update({key: value for key, value in optional.items() if value is not None})
    return contract


__all__ = ["DEFAULT_FALLBACK", "stack_contract"]
