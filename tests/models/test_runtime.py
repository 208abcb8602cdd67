"""KV cache and batching: incremental, rolled-back and batched scoring equal a full recompute."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.models.kv_cache import INITIAL_CAPACITY, KVCache
from sdcp_conformance.models.registry import Manifest
from sdcp_conformance.models.runtime import LlamaRuntime

TOLERANCE = 1e-5
"""float32: the same arithmetic in different batch shapes differs only by rounding."""
V = 128


def tokens(seed: object, count: int) -> list[int]:
    rng = random.Random(str(seed))
    return [rng.randrange(V) for _ in range(count)]


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and float((a - b).abs().max()) <= TOLERANCE


@pytest.fixture(scope="module")
def ctx(runtime: Callable[..., LlamaRuntime]) -> LlamaRuntime:
    return runtime("ctx")


def test_ctx_depends_on_early_context(ctx: LlamaRuntime) -> None:
    """Makes the tests below meaningful: a cache that kept or lost a token changes the logits."""
    seq = tokens("early", 60)
    changed = [(seq[0] + 1) % V, *seq[1:]]
    assert float((ctx.logits(seq)[-1] - ctx.logits(changed)[-1]).abs().max()) > 0.05


def test_extending_in_pieces_equals_full_recompute(ctx: LlamaRuntime) -> None:
    seq = tokens("pieces", 150)  # crosses the initial capacity twice
    cache = ctx.new_cache()
    rows = [ctx.extend(cache, seq[a:b]) for a, b in [(0, 30), (30, 37), (37, 38), (38, 150)]]
    assert cache.length == 150 > 2 * INITIAL_CAPACITY
    assert close(torch.cat(rows), ctx.logits(seq))


def test_rollback_then_extend_equals_recompute_of_the_kept_tokens(ctx: LlamaRuntime) -> None:
    prefix, proposal, after = tokens("p", 40), tokens("x", 8), tokens("b", 6)
    cache = ctx.new_cache()
    ctx.extend(cache, prefix)
    ctx.extend(cache, proposal)
    cache.truncate(len(prefix) + 3)  # three proposed tokens accepted
    rows = ctx.extend(cache, after)
    full = ctx.logits(prefix + proposal[:3] + after)
    assert close(rows, full[-len(after):])
    # The mutant that forgets to roll back sees different logits.
    stale = ctx.new_cache()
    ctx.extend(stale, prefix + proposal)
    assert not close(ctx.extend(stale, after), full[-len(after):])


@settings(derandomize=True, max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 12)), min_size=1, max_size=8))
def test_any_sequence_of_extends_and_truncations_matches_recompute(
    ctx: LlamaRuntime, steps: list[tuple[bool, int]]
) -> None:
    cache, held = ctx.new_cache(), list[int]()
    for n, (is_extend, amount) in enumerate(steps):
        if is_extend or not held:
            new = tokens(("op", n, amount, len(held)), amount)
            rows = ctx.extend(cache, new)
            held += new
            assert close(rows, ctx.logits(held)[-len(new):])
        else:
            keep = max(0, len(held) - amount)
            cache.truncate(keep)
            held = held[:keep]
        assert cache.length == len(held)


def test_one_batched_pass_equals_per_session_passes(ctx: LlamaRuntime) -> None:
    prefixes = [[], tokens(1, 3), tokens(2, 40), tokens(3, 70), tokens(4, 1)]
    news = [tokens(5, 8), tokens(6, 1), tokens(7, 5), tokens(8, 8), tokens(9, 2)]
    batched = [ctx.new_cache() for _ in prefixes]
    single = [ctx.new_cache() for _ in prefixes]
    for cache_b, cache_s, prefix in zip(batched, single, prefixes, strict=True):
        if prefix:
            ctx.extend(cache_b, prefix)
            ctx.extend(cache_s, prefix)
    rows = ctx.score_batch(batched, news)
    for row, cache_s, new in zip(rows, single, news, strict=True):
        assert close(row, ctx.extend(cache_s, new))
    assert [c.length for c in batched] == [len(p) + len(n) for p, n in zip(prefixes, news,
                                                                           strict=True)]
    # The batched caches hold the right keys: a second, single pass continues them correctly.
    for cache_b, prefix, new in zip(batched, prefixes, news, strict=True):
        follow = tokens(("f", len(prefix)), 3)
        assert close(ctx.extend(cache_b, follow), ctx.logits(prefix + new + follow)[-3:])


def test_verify_rows_are_p1_to_pm_plus_1(ctx: LlamaRuntime) -> None:
    """With pending committed tokens fed first, row i is the distribution after prefix + x[:i]."""
    committed = [tokens("c1", 20), tokens("c2", 9)]
    proposals = [tokens("x1", 4), tokens("x2", 6)]
    pendings = [committed[0][-1:], committed[1][-2:]]
    caches = [ctx.new_cache(), ctx.new_cache()]
    for cache, done, pending in zip(caches, committed, pendings, strict=True):
        ctx.extend(cache, done[: len(done) - len(pending)])
    rows = ctx.verify_rows(caches, pendings, proposals)
    for row, done, proposal in zip(rows, committed, proposals, strict=True):
        full = ctx.logits(done + proposal)
        assert row.shape == (len(proposal) + 1, V)
        assert close(row, full[len(done) - 1 :])


def test_truncate_refuses_lengths_outside_the_cache(ctx: LlamaRuntime) -> None:
    cache = ctx.new_cache()
    ctx.extend(cache, [1, 2, 3])
    for bad in (-1, 4):
        with pytest.raises(InvalidArgument):
            cache.truncate(bad)
    cache.truncate(0)
    assert cache.length == 0


def test_bad_batches_are_refused(
    ctx: LlamaRuntime, runtime: Callable[..., LlamaRuntime]
) -> None:
    cache = ctx.new_cache()
    bad: list[tuple[list[KVCache], list[list[int]]]] = [
        ([cache], [[]]), ([cache], [[V]]), ([cache, cache], [[1], [2]]), ([], []),
        ([cache], [[1], [2]])]
    for caches, lists in bad:
        with pytest.raises(InvalidArgument):
            ctx.score_batch(caches, lists)
    for foreign in (runtime("ctx-draft-far").new_cache(), runtime("ctx", torch.bfloat16).new_cache()):
        with pytest.raises(InvalidArgument):
            ctx.extend(foreign, [1])
    with pytest.raises(InvalidArgument):
        ctx.verify_rows([cache], [[]], [[1]])
    assert cache.length == 0


def test_bfloat16_runtime_stays_near_float32(
    ctx: LlamaRuntime, runtime: Callable[..., LlamaRuntime]
) -> None:
    bf16 = runtime("ctx", torch.bfloat16)
    seq = tokens("bf16", 64)
    cache = bf16.new_cache()
    rows = torch.cat([bf16.extend(cache, seq[:50]), bf16.extend(cache, seq[50:])])
    assert rows.dtype == torch.float32
    error = float((rows - ctx.logits(seq)).abs().max())
    assert 0 < error < 0.25


def test_weights_with_missing_or_misshapen_tensors_are_refused(manifest: Manifest) -> None:
    checkpoint = Checkpoint.open(manifest.model("ctx-draft-far").path)
    tensors = checkpoint.tensors()
    missing = {k: v for k, v in tensors.items() if k != "model.layers.1.mlp.up_proj.weight"}
    with pytest.raises(InvalidArgument, match="lacks"):
        LlamaRuntime.from_tensors(checkpoint.config, missing)
    misshapen = {**tensors, "model.norm.weight": torch.ones(3)}
    with pytest.raises(InvalidArgument, match="shape"):
        LlamaRuntime.from_tensors(checkpoint.config, misshapen)


def test_tied_checkpoint_without_lm_head_uses_the_embedding(manifest: Manifest) -> None:
    checkpoint = Checkpoint.open(manifest.model("ctx-draft-far").path)
    tensors = checkpoint.tensors()
    explicit = {**tensors, "lm_head.weight": tensors["model.embed_tokens.weight"]}
    tied = {k: v for k, v in tensors.items() if k != "lm_head.weight"}
    config = dataclasses.replace(checkpoint.config, tie_word_embeddings=True)
    seq = tokens("tied", 12)
    assert torch.equal(LlamaRuntime.from_tensors(config, tied).logits(seq),
                       LlamaRuntime.from_tensors(config, explicit).logits(seq))
    assert not torch.equal(LlamaRuntime.from_tensors(config, tensors).logits(seq),
                           LlamaRuntime.from_tensors(config, explicit).logits(seq))
