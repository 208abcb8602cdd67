"""Each checkpoint through Hugging Face ``LlamaForCausalLM`` gives the runtime's float32 logits, KV cache included.

transformers is a test dependency (pinned in constraints.txt): this test always runs, never skips.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import transformers

from sdcp_conformance.models.registry import Manifest
from sdcp_conformance.models.runtime import LlamaRuntime

MODEL_IDS = ["bigram", "bigram-draft-near", "bigram-draft-far",
             "ctx", "ctx-draft-near", "ctx-draft-far"]
TOLERANCE = 1e-4
"""Absolute, on logits of magnitude up to about 15; observed differences are below 1e-5."""


@pytest.mark.parametrize("model_id", MODEL_IDS)
def test_transformers_and_runtime_agree_in_float32(
    manifest: Manifest, runtime: Callable[..., LlamaRuntime], model_id: str
) -> None:
    model = transformers.LlamaForCausalLM.from_pretrained(
        manifest.model(model_id).path, dtype=torch.float32, attn_implementation="eager"
    )
    model.float().eval()  # transformers 4.x spells the dtype argument differently
    generator = torch.Generator().manual_seed(4)
    tokens = torch.randint(0, manifest.vocab_size, (3, 80), generator=generator)
    with torch.no_grad():
        expected = model(tokens).logits
    ours = runtime(model_id)
    for row, want in zip(tokens.tolist(), expected, strict=True):
        got = ours.logits(row)
        assert got.shape == want.shape
        assert float((got - want).abs().max()) <= TOLERANCE
    # The comparison is not vacuous: logits vary across positions and vocabulary.
    assert float(expected.std()) > 0.5


@pytest.mark.parametrize("model_id", ["ctx", "ctx-draft-near"])
def test_extend_rollback_extend_through_the_kv_cache_matches_a_full_transformers_pass(
    manifest: Manifest, runtime: Callable[..., LlamaRuntime], model_id: str
) -> None:
    """A verifier's KV path: prefix, a proposal, a rollback to what was accepted, then more tokens — each
    extension's logits equal transformers' logits of the whole sequence at those positions."""
    model = transformers.LlamaForCausalLM.from_pretrained(
        manifest.model(model_id).path, dtype=torch.float32, attn_implementation="eager"
    )
    model.float().eval()
    generator = torch.Generator().manual_seed(9)
    prefix, proposal, after, more = (torch.randint(0, manifest.vocab_size, (n,), generator=generator).tolist()
                                     for n in (37, 6, 5, 4))
    ours = runtime(model_id)
    cache = ours.new_cache()
    ours.extend(cache, prefix)
    ours.extend(cache, proposal)
    cache.truncate(len(prefix) + 2)  # two proposed tokens accepted, the other four rolled back
    rows_after = ours.extend(cache, after)
    rows_more = ours.extend(cache, more)
    sequence = prefix + proposal[:2] + after + more
    with torch.no_grad():
        expected = model(torch.tensor([sequence])).logits[0]
    start = len(prefix) + 2
    assert float((rows_after - expected[start:start + len(after)]).abs().max()) <= TOLERANCE
    assert float((rows_more - expected[start + len(after):]).abs().max()) <= TOLERANCE
    # Not vacuous: without the rollback the cached positions would give other logits.
    stale = ours.new_cache()
    ours.extend(stale, prefix + proposal)
    assert float((ours.extend(stale, after) - expected[start:start + len(after)]).abs().max()) > 100 * TOLERANCE
