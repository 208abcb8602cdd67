"""The oracle's numpy forward pass of the mock models without a closed form agrees with the torch runtime, decodes
the manifest's recorded greedy continuations, and runs with torch unimportable."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest
import torch

from sdcp_conformance.cli.extras import EXTRAS
from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.models.registry import load_manifest, mock_model
from sdcp_conformance.models.runtime import LlamaRuntime
from sdcp_conformance.oracle.greedy import argmax_smallest, next_logits
from sdcp_conformance.oracle.llama_numpy import NumpyLlama, load_model, read_safetensors

CTX_MODELS = ("ctx", "ctx-draft-near", "ctx-draft-far")
CONTEXTS = 20
SEED = 20240611

LOGIT_TOLERANCE = 1e-4
"""Numpy (float64 from the stored weights) against the torch runtime in float32, for one logit. Measured over the
20 contexts of each model below, every row: at most 5.4e-6 (ctx 5.4e-6, ctx-draft-near 5.4e-6, ctx-draft-far
3.5e-6), and 6.6e-6 along the 16 recorded greedy sequences of 68-76 tokens: float32 rounding. The bound leaves
15 times that."""


@pytest.fixture(scope="module")
def runtime() -> Callable[[str], LlamaRuntime]:
    loaded: dict[str, LlamaRuntime] = {}

    def get(model_id: str) -> LlamaRuntime:
        if model_id not in loaded:
            loaded[model_id] = LlamaRuntime.load(mock_model(model_id).path, dtype=torch.float32)
        return loaded[model_id]

    return get


def _contexts(model_id: str) -> list[list[int]]:
    rng = np.random.default_rng([SEED, CTX_MODELS.index(model_id)])
    vocab = mock_model(model_id).vocab_size
    return [rng.integers(0, vocab, int(rng.integers(1, 41))).tolist() for _ in range(CONTEXTS)]


def test_every_ctx_model_is_one_without_a_closed_form() -> None:
    assert {m.model_id for m in load_manifest().models.values() if m.closed_form is None} == set(CTX_MODELS)


@pytest.mark.parametrize("model_id", CTX_MODELS)
def test_the_hand_read_weights_are_the_checkpoints_widened_exactly(model_id: str) -> None:
    path = mock_model(model_id).path
    ours = read_safetensors(path / "model.safetensors")
    theirs = Checkpoint.open(path).tensors()
    assert set(ours) == set(theirs)
    for name, tensor in theirs.items():
        assert tensor.dtype == torch.bfloat16
        assert ours[name].dtype == np.float32 and np.array_equal(ours[name], tensor.float().numpy()), name


@pytest.mark.parametrize("model_id", CTX_MODELS)
def test_numpy_logits_are_the_float32_runtimes(model_id: str, runtime: Callable[[str], LlamaRuntime]) -> None:
    """Every row of 20 random contexts of 1..40 tokens: max |numpy - torch float32| measured 5.4e-6 (all three
    models), bound :data:`LOGIT_TOLERANCE` = 1e-4. The argmax agrees wherever the top two logits are further apart."""
    model = NumpyLlama.load(mock_model(model_id).path)
    worst = 0.0
    for context in _contexts(model_id):
        ours = model.logits(context)
        theirs = runtime(model_id).logits(context).double().numpy()
        assert ours.shape == theirs.shape == (len(context), model.config.vocab_size)
        worst = max(worst, float(np.abs(ours - theirs).max()))
        assert np.allclose(ours, theirs, rtol=0.0, atol=LOGIT_TOLERANCE), (context, np.abs(ours - theirs).max())
        for row, other in zip(ours, theirs, strict=True):
            top2 = np.sort(other)[-2:]
            if top2[1] - top2[0] > LOGIT_TOLERANCE:
                assert argmax_smallest(row) == argmax_smallest(other), context
        assert np.array_equal(next_logits(model_id, context), ours[-1])  # the oracle is this forward pass
    assert worst < LOGIT_TOLERANCE


def test_the_recorded_greedy_continuations_are_the_numpy_oracles() -> None:
    """Each of the manifest's greedy prompts: the numpy model's argmax at every step of prompt + recorded
    continuation is the recorded next token, with at least the manifest's margin; the first prompt decoded token by
    token through :func:`next_logits` too."""
    recorded = load_manifest().greedy_prompts()
    model = load_model(mock_model(recorded.model_id).path)
    for prompt in recorded.prompts:
        assert len(prompt.greedy) == recorded.steps
        rows = model.logits([*prompt.tokens, *prompt.greedy])[len(prompt.tokens) - 1:-1]  # causal: row j sees [:j+1]
        assert [argmax_smallest(row) for row in rows] == list(prompt.greedy), prompt.text
        top2 = np.sort(rows, axis=-1)[:, -2:]
        assert float((top2[:, 1] - top2[:, 0]).min()) >= recorded.margin - LOGIT_TOLERANCE, prompt.text
    first = recorded.prompts[0]
    decoded: list[int] = []
    for _ in range(recorded.steps):
        decoded.append(argmax_smallest(next_logits(recorded.model_id, [*first.tokens, *decoded])))
    assert decoded == list(first.greedy)


BLOCKED_CHILD = """
import importlib.abc, sys

BLOCKED = {blocked!r}

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in BLOCKED:
            raise ModuleNotFoundError(f'No module named {{name!r}} (blocked)', name=name)
        return None

sys.meta_path.insert(0, Blocker())
try:
    import torch
except ModuleNotFoundError:
    pass
else:
    raise SystemExit('the blocker let torch in')

from sdcp_conformance.oracle.greedy import greedy_continuation, next_logits, top_tokens
row = next_logits('ctx-draft-near', [5, 9, 14, 22, 7])
assert row.shape == (128,) and row.dtype.name == 'float64', row.shape
assert len(greedy_continuation('ctx-draft-far', [3, 4], 3)) == 3
assert top_tokens('ctx', [60, 61, 62, 63])
leaked = sorted(name for name in sys.modules if name.partition('.')[0] in BLOCKED)
assert not leaked, leaked
assert 'torch' not in sys.modules
print('ok', int(row.argmax()))
"""


def test_the_oracle_runs_with_torch_unimportable() -> None:
    """A base install: torch, safetensors and tokenizers (the [reference] extra) cannot be imported."""
    child = BLOCKED_CHILD.format(blocked=set(EXTRAS["reference"]))
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = argmax_smallest(next_logits("ctx-draft-near", [5, 9, 14, 22, 7]))
    assert done.stdout.split() == ["ok", str(expected)]
