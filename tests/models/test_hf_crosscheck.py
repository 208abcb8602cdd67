"""Each checkpoint through Hugging Face ``LlamaForCausalLM`` gives the runtime's float32 logits."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from sdcp_conformance.models.registry import Manifest
from sdcp_conformance.models.runtime import LlamaRuntime

transformers = pytest.importorskip(
    "transformers", reason="transformers (a test extra) is needed for the Hugging Face cross-check"
)

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
