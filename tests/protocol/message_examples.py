"""One valid example of every SDCP message, as decoded CBOR (dicts with the CDDL member names)."""

from __future__ import annotations

import copy
from typing import Any

SESSION = bytes(range(16))
DIGEST = bytes(range(32))
TARGET = bytes([0xAA]) * 32
TOKENIZER = bytes([0xBB]) * 32

CONTRACT: dict[str, Any] = {
    "target": TARGET,
    "tokenizer": TOKENIZER,
    "drafters": [bytes([0xCC]) * 32],
    "rule": 2,
    "sampling": {"temperature_milli": 1000, "top_k": 0, "top_p_milli": 1000, "seed": 7},
    "m_max": 8,
    "max_new": 64,
    "stop": [2],
    "low_rounds": 3,
    "low_ratio": 25,
    "fallback": [1, 3, 2, 5],
    "self_load": 50,
    "self_max": 16,
    "scope": bytes(16),
}
STATUS: dict[str, Any] = {
    "instance": "https://127.0.0.1:9001/drafter/",
    "role": 1,
    "load": 10,
    "queue": 0,
    "accept_milli": 800,
    "cache_mbps": 1000,
    "ttl_ms": 5000,
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "contract": CONTRACT,
    "sampling": {"temperature_milli": 700, "top_k": 5, "top_p_milli": 900, "seed": 1},
    "session-open": {
        "session": SESSION,
        "epoch": 1,
        "contract": CONTRACT,
        "prompt": [1, 2, 3],
        "prompt_kv": "https://127.0.0.1:9000/kv/prompt",
        "commit_log": "https://127.0.0.1:9000/log/1",
        "resume": {
            "round": 4,
            "committed": 9,
            "digest": DIGEST,
            "committed_tokens": "https://127.0.0.1:9000/tokens/1",
            "target_kv": "https://127.0.0.1:9000/kv/target",
        },
    },
    "session-state": {"session": SESSION, "epoch": 1, "round": 0, "committed": 0, "digest": DIGEST, "state": 0},
    "assignment": {
        "session": SESSION,
        "epoch": 1,
        "contract": CONTRACT,
        "verifier": "https://127.0.0.1:9002/",
        "drafter": "https://127.0.0.1:9001/drafter/",
        "prompt": "https://127.0.0.1:9000/prompt/1",
        "round": 0,
        "sampling": {"temperature_milli": 500},
        "committed": 0,
        "digest": DIGEST,
        "committed_tokens": "https://127.0.0.1:9000/tokens/1",
        "m_init": 4,
    },
    "proposal": {
        "session": SESSION,
        "epoch": 1,
        "round": 1,
        "drafter": "https://127.0.0.1:9001/drafter/",
        "base": 0,
        "base_digest": DIGEST,
        "tokens": [5, 6, 7],
        "q_rows": "https://127.0.0.1:9000/q/1",
        "draft_kv": "https://127.0.0.1:9000/kv/draft",
        "status": STATUS,
    },
    "verdict": {
        "session": SESSION,
        "epoch": 1,
        "round": 1,
        "accepted": 2,
        "emitted": [5, 6, 9],
        "committed": 3,
        "digest": DIGEST,
        "action": 0,
        "m_cap": 8,
        "low": 0,
        "load": 40,
    },
    "output": {"session": SESSION, "epoch": 1, "from": 0, "tokens": [5, 6, 9], "final": True, "finish": 4},
    "status": STATUS,
    "event": {"session": SESSION, "epoch": 1, "kind": 2, "committed": 3, "digest": DIGEST},
    "policy": {"session": SESSION, "from_round": 3, "sampling": {"temperature_milli": 0}},
}

OPTIONAL_MEMBERS: dict[str, set[str]] = {
    "contract": {"drafters", "sampling", "low_ratio", "self_load", "self_max", "scope"},
    "sampling": {"temperature_milli", "top_k", "top_p_milli", "seed"},
    "session-open": {"prompt_kv", "resume"},
    "session-state": {"state"},
    "assignment": {"sampling", "committed_tokens"},
    "proposal": {"q_rows", "draft_kv"},
    "verdict": set(),
    "output": {"finish"},
    "status": {"accept_milli", "cache_mbps"},
    "event": set(),
    "policy": set(),
}


def example(name: str) -> dict[str, Any]:
    return copy.deepcopy(EXAMPLES[name])


def required_members(name: str) -> list[str]:
    return sorted(set(EXAMPLES[name]) - OPTIONAL_MEMBERS[name])
