"""The verifiers, drafters and models the router's tests name."""

from __future__ import annotations

DA = "https://127.0.0.1:1/drafter-a/"
DB = "https://127.0.0.1:1/drafter-b/"
DC = "https://127.0.0.1:1/drafter-c/"
V1 = "https://127.0.0.1:1/verifier-1/"
V2 = "https://127.0.0.1:1/verifier-2/"
MODEL_1 = bytes([0x11]) * 32
MODEL_2 = bytes([0x22]) * 32
