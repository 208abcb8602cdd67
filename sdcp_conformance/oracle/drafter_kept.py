"""What a drafter that kept draft state beyond the accepted positions drafts from (§6.3), computed by the harness.

After a verdict accepting ``a`` of the M proposed tokens ``x`` and adding the token ``b``, a correct drafter drafts
from the committed prefix ``P + x[:a] + [b]``. One that kept its draft state drafts from another context:

- its own tokens up to a rejected position, ``P + x[:j]`` for some j > a: it never took b (it continues its token at
  the first rejected position, or drafted ahead assuming full acceptance, §6.2);
- those tokens followed by b, ``P + x[:j] + [b]``: the rejected positions stay in its context and b is appended
  after them (a draft KV cache extended, never truncated).

With a draft model whose next token depends on the last token alone (the closed-form bigram models) the second
kind cannot be told from the committed prefix, whose last token is b too; with a context-dependent model it can,
for the right b. :func:`telling_bonus` chooses such a b, :func:`kept_contexts` lists the contexts a proposal after
the verdict is compared with. :func:`telling_token` does the same for a token committed without the drafter (a
resynchronisation, a replacing assignment), against a context that still holds its abandoned proposal, and
:func:`telling_pair` for two such tokens where no single one tells. Every
expectation comes from the draft model (:mod:`sdcp_conformance.oracle.greedy`), never from a drafter.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.oracle.greedy import top_tokens, top_tokens_each

FIRST_WORD = 3
"""The additional tokens tried start after ``<unk>``, ``<s>`` and ``</s>``."""


@dataclass(frozen=True)
class Kept:
    """A context a drafter that kept draft state may draft from, and what it kept."""

    what: str
    context: tuple[int, ...]


def context_dependent(model: str) -> bool:
    """Whether the model's next token depends on more than the last token (it has no closed bigram form)."""
    return mock_model(model).closed_form != "bigram"


def kept_contexts(model: str, prefix: Sequence[int], proposed: Sequence[int], accepted: int,
                  bonus: int) -> list[Kept]:
    """The contexts of a drafter that kept draft state beyond position ``accepted``: its own tokens up to each
    rejected position, and (for a context-dependent model) those followed by ``bonus``."""
    prefix, proposed = tuple(prefix), tuple(proposed)
    rejected = range(accepted + 1, len(proposed) + 1)
    found = [Kept(f"its own tokens {list(proposed[accepted:j])} at the rejected positions instead of the "
                  f"additional token {bonus}", (*prefix, *proposed[:j])) for j in rejected]
    if context_dependent(model):
        found += [Kept(f"the rejected tokens {list(proposed[accepted:j])} still in its context before the additional "
                       f"token {bonus}", (*prefix, *proposed[:j], bonus)) for j in rejected]
    return found


def telling_bonus(model: str, prefix: Sequence[int], proposed: Sequence[int], accepted: int) -> int | None:
    """An additional token ``b`` other than the drafter's own beyond position ``accepted`` after which no greedy next
    token (under any tie-break, within the runtime tolerance) of the committed prefix is one of the contexts that
    matter: the drafter's own tokens up to each rejected position and, for a context-dependent model, its whole
    draft followed by ``b``. A kept context then shows in the next proposal's first token, however the drafter breaks
    ties. ``None`` when no token tells (a context-dependent model after some prefixes).
    """
    prefix, proposed = list(prefix), list(proposed)
    own = set[int]().union(*(top_tokens(model, [*prefix, *proposed[:j]])
                             for j in range(accepted + 1, len(proposed) + 1)))
    kept = [[*prefix, *proposed]] if context_dependent(model) else []
    return telling_token(model, [*prefix, *proposed[:accepted]], kept, avoid=own, exclude=proposed[accepted:])


def telling_token(model: str, committed: Sequence[int], kept: Sequence[Sequence[int]], *,
                  avoid: Set[int] = frozenset(), exclude: Sequence[int] = ()) -> int | None:
    """The first token ``t`` (not in ``exclude``) to commit after ``committed`` such that no greedy next token after
    ``committed + [t]`` is one after any ``kept`` context followed by ``t``, nor in ``avoid``: a drafter drafting
    from such a context instead of the committed prefix then shows in its next proposal's first token. ``None`` when
    no token tells."""
    candidates = [token for token in range(FIRST_WORD, mock_model(model).vocab_size) if token not in exclude]
    if not candidates:
        return None
    # Every candidate's continuation of every context in one pass each (the oracle's numpy forward is batched):
    # a case waits on this while it holds the drafter's proposal.
    committed_tops = top_tokens_each(model, committed, candidates)
    kept_tops = [top_tokens_each(model, context, candidates) for context in kept]
    for index, token in enumerate(candidates):
        tops = committed_tops[index]
        if tops & avoid or any(tops & others[index] for others in kept_tops):
            continue
        return token
    return None


PAIR_TRIES = 8
"""How many tokens :func:`telling_pair` tries before the telling one. After some prefixes no single token tells
(the abandoned proposal lies several positions back, and a near draft model hardly looks there: the resynchronised
prefix of DRF-P1-DRF-6-RESYNC-003 was one in 41 of 200 seeds); after all but 7 of the 125 first tokens tried there,
one does. With the pair, the case killed drf-resync-keeps-stale-draft under each of seeds 100-299 and the reference
passed it under each of seeds 0-59."""


def telling_pair(model: str, committed: Sequence[int], kept: Sequence[Sequence[int]], *,
                 exclude_first: Sequence[int] = ()) -> tuple[int, int] | None:
    """Two tokens ``(s, t)`` to commit after ``committed``, ``t`` telling (:func:`telling_token`) after
    ``committed + [s]`` from every ``kept`` context followed by ``s``: for when no single token tells. Up to
    :data:`PAIR_TRIES` first tokens are tried (none in ``exclude_first``); ``None`` when none of them leads to one."""
    firsts = [token for token in range(FIRST_WORD, mock_model(model).vocab_size) if token not in exclude_first]
    for first in firsts[:PAIR_TRIES]:
        told = telling_token(model, [*committed, first], [[*context, first] for context in kept])
        if told is not None:
            return first, told
    return None


__all__ = ["FIRST_WORD", "PAIR_TRIES", "Kept", "context_dependent", "kept_contexts", "telling_bonus",
           "telling_pair", "telling_token"]
