"""Small helpers shared by the MLC tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

from sdcp_conformance.transport.types import Request, Response

T = TypeVar("T")

LOG = "/logs/session-1"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def request(method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> Request:
    pairs = tuple((name.lower(), value) for name, value in (headers or {}).items())
    return Request(method, path, "", pairs, body, "https://127.0.0.1/router/")


def problem_type(response: Response) -> str:
    assert response.header("content-type") == "application/problem+json"
    return str(json.loads(response.body)["type"])
