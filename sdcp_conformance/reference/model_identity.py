"""What every reference role reads of the model it runs: its vocabulary size and its hashes (P1-HASH-1, P1-HASH-2).

The drafter's :class:`~.drafter.ports.DraftModel` and the verifier's
:class:`~.verifier.ports.TargetModel` both extend :class:`ModelIdentity`.
"""

from __future__ import annotations

from typing import Protocol


class ModelIdentity(Protocol):
    """A model's vocabulary size and the SHA-256 digests that name it and its tokenizer."""

    @property
    def vocab_size(self) -> int: ...

    @property
    def model_sha256(self) -> bytes: ...

    @property
    def tokenizer_sha256(self) -> bytes: ...


__all__ = ["ModelIdentity"]
