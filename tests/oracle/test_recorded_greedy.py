"""The ctx oracle along the manifest's greedy prompts needs no torch: the recorded continuation, which is what the
float32 runtime computes (so a base install certifies a target's ctx cases)."""

from __future__ import annotations

from sdcp_conformance.models.registry import load_manifest
from sdcp_conformance.oracle.greedy import argmax_smallest, greedy_continuation, next_logits, recorded_greedy


def test_the_recorded_continuation_is_the_runtimes_greedy_decoding() -> None:
    prompt = load_manifest().greedy_prompts().prompts[0]
    computed: list[int] = []
    for _ in range(6):  # the numpy forward pass, one token at a time
        computed.append(argmax_smallest(next_logits("ctx", [*prompt.tokens, *computed])))
    assert recorded_greedy("ctx", prompt.tokens, 6) == computed == list(prompt.greedy[:6])
    assert recorded_greedy("ctx", [*prompt.tokens, *computed[:4]], 2) == computed[4:6]
    assert greedy_continuation("ctx", [*prompt.tokens, *computed[:1]], 3) == computed[1:4]


def test_off_the_record_there_is_no_recorded_continuation() -> None:
    prompt = load_manifest().greedy_prompts().prompts[0]
    wrong = (prompt.greedy[0] + 1) % 128
    assert recorded_greedy("ctx", [*prompt.tokens, wrong], 1) is None  # left the recorded path
    assert recorded_greedy("ctx", prompt.tokens, len(prompt.greedy) + 1) is None  # past its end
    assert recorded_greedy("ctx", [11, 42, 7, 19], 1) is None
    assert recorded_greedy("bigram", prompt.tokens, 1) is None  # only the model the prompts were recorded for
