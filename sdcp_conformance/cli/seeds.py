"""One ``--seed`` for every command: one range, one default behaviour.

Every command that takes ``--seed`` (``certify``, ``fuzz``, ``selftest``,
``generate``, ``serve drafter``) takes an integer in ``0..2**32-1``
(:data:`SEED_MAX`); without it the command draws one at random and prints
it, so that ``--seed N`` replays the run. ``generate`` draws one only where
it matters (a rule-2 contract's verifier seed, §6.4); the pytest plugin's
``--sdcp-seed`` behaves the same.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import click

SEED_MAX = 2**32 - 1
SEED_METAVAR = "0..4294967295"
SEED_TYPE = click.IntRange(0, SEED_MAX)
DRAWN = "Default: drawn at random and printed, so that `--seed N` replays it."


def seed_option(what: str, *, dest: str = "seed") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--seed`` (into ``dest``): ``what`` it seeds, its range and the default every command shares."""
    return click.option("--seed", dest, type=SEED_TYPE, default=None, metavar=SEED_METAVAR,
                        help=f"{what} {DRAWN}")


def resolve_seed(seed: int | None) -> int:
    """The given seed, or one drawn at random (in ``0..SEED_MAX``)."""
    return secrets.randbelow(SEED_MAX + 1) if seed is None else seed


def drawn_line(seed: int) -> str:
    """What a command prints when it drew its seed."""
    return f"seed {seed} (drawn at random; --seed {seed} replays it)"


__all__ = ["DRAWN", "SEED_MAX", "SEED_METAVAR", "SEED_TYPE", "drawn_line", "resolve_seed", "seed_option"]
