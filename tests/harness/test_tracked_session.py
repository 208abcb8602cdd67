"""The harness's own digest of a tracked session stays §4.2's chain however its output changes."""

from __future__ import annotations

import random

from sdcp_conformance.harness.contexts.verifier import TrackedSession
from sdcp_conformance.protocol.chain import contract_digest, extend_digest, prefix_digest


def _expected(session: TrackedSession) -> bytes:
    return extend_digest(prefix_digest(contract_digest(session.contract), session.prompt), session.output)


def test_the_cached_chain_follows_appends_rewrites_truncations_and_contract_changes() -> None:
    rng = random.Random(3)
    session = TrackedSession(b"\x01" * 16, 1, {"rule": 1, "m_max": 8}, "bigram", [5, 6, 7], "log")
    assert session.digest == _expected(session)
    for _ in range(200):
        move = rng.randrange(4)
        if move == 0:
            session.output.extend(rng.randrange(3, 128) for _ in range(rng.randrange(1, 5)))
        elif move == 1 and session.output:
            session.output[rng.randrange(len(session.output))] = rng.randrange(3, 128)
        elif move == 2:
            del session.output[rng.randrange(len(session.output) + 1):]
        else:
            session.contract["m_max"] = rng.randrange(1, 9)
        assert session.digest == _expected(session)
