"""Where the harness process's time goes: a cProfile of it, aggregated by module group (for bench_harness.py).

Every function's own time (``tottime``) goes to one group. Project modules
and a few libraries with one job (cbor2: encoding; hashlib: digests) belong
to a group directly. Code that serves whoever calls it — numpy, h2, hpack,
built-ins, most of the standard library — is charged to its callers, in
proportion to the time it spent for each (cProfile records that per caller),
so numpy time under the rule-2 oracle counts as oracle time and h2 time
under the server as server time. Waiting in ``epoll`` is idle, not work, and
is kept apart.

cProfile adds a cost to every Python call, so the shares lean towards
call-heavy code; the benchmark scales them to the CPU it measured without
the profiler.
"""

from __future__ import annotations

import pstats
from collections.abc import Callable, Mapping

IDLE = "idle: waiting in epoll"
OTHER = "other"

Func = tuple[str, int, str]
Matcher = Callable[[str, str], bool]


def _files(*fragments: str) -> Matcher:
    return lambda path, name: any(fragment in path for fragment in fragments)


def _names(*fragments: str) -> Matcher:
    return lambda path, name: path == "~" and any(fragment in name for fragment in fragments)


def _either(*matchers: Matcher) -> Matcher:
    return lambda path, name: any(matcher(path, name) for matcher in matchers)


P = "sdcp_conformance/"
GROUPS: tuple[tuple[str, Matcher], ...] = (
    (IDLE, lambda path, name: name == "<method 'poll' of 'select.epoll' objects>"),
    ("encoding (codec, cbor2)", _either(_files(P + "protocol/codec.py", "/cbor2/"), _names("_cbor2"))),
    ("message types (decode, validate)", _files(P + "protocol/messages.py", P + "protocol/fields.py",
                                                P + "protocol/contract.py", P + "protocol/cddl.py", "cddl_verifier")),
    ("digest chain (SHA-256)", _either(_files(P + "protocol/chain.py"), _names("_hashlib", "openssl_sha"))),
    ("oracle (rule-2 law, designs, e-process, greedy)", _files(P + "oracle/", P + "models/", P + "protocol/sampling.py",
                                                               P + "protocol/rules.py", P + "protocol/rng.py")),
    ("transcript (record, render)", _files(P + "harness/transcript.py", P + "cache/transcript.py")),
    ("judging and case logic", _files(P + "harness/context.py", P + "harness/judging.py", P + "harness/case.py",
                                      P + "harness/runner.py", P + "suites/", P + "judge/")),
    ("client (IutLink, H2Client)", _files(P + "harness/iut.py", P + "transport/h2client", P + "transport/exchange.py",
                                          P + "transport/failures.py", P + "transport/origins.py")),
    ("server (H2Server)", _files(P + "transport/server", P + "transport/limits.py", P + "transport/types.py",
                                 P + "transport/problem.py")),
    ("cache app (MLC: store, commit log, faults, recorder)", _files(P + "cache/", P + "harness/environment.py")),
    ("TLS and sockets (asyncio transports)", _either(_files("asyncio/sslproto.py", "asyncio/selector_events.py",
                                                            "/ssl.py"), _names("_ssl.", "socket"))),
    ("event loop (asyncio)", _files("asyncio/")),
)
"""Groups in the order they are tried; the first that matches a function owns its time."""


SHARED = (P + "transport/h2state.py", P + "transport/hpack_reuse.py", P + "errors.py")
"""Project modules that serve client and server alike: their callers decide."""


def direct_group(func: Func) -> str | None:
    """The group a function belongs to by itself, or None when its callers decide (a library)."""
    path, _, name = func
    path = path.replace("\\", "/")
    if any(shared in path for shared in SHARED):
        return None
    for group, matches in GROUPS:
        if matches(path, name):
            return group
    if P in path:
        return "harness, elsewhere"
    return None


class _Attribution:
    """Each function's time as shares of groups: its own group's, or its callers' mix."""

    def __init__(self, raw: Mapping[Func, tuple[int, int, float, float, Mapping[Func, tuple[int, int, float, float]]]]
                 ) -> None:
        self._raw = raw
        self._memo: dict[Func, dict[str, float]] = {}

    def shares(self, func: Func, seen: frozenset[Func] = frozenset()) -> dict[str, float]:
        own = direct_group(func)
        if own is not None:
            return {own: 1.0}
        if func in self._memo:
            return self._memo[func]
        callers = self._raw.get(func, (0, 0, 0.0, 0.0, {}))[4]
        weights = {caller: stat[2] or stat[1] * 1e-9 for caller, stat in callers.items() if caller not in seen}
        total = sum(weights.values())
        if total <= 0:
            return {OTHER: 1.0}
        mix: dict[str, float] = {}
        for caller, weight in weights.items():
            for group, share in self.shares(caller, seen | {func}).items():
                mix[group] = mix.get(group, 0.0) + share * weight / total
        self._memo[func] = mix  # computed without the callers in ``seen``: close enough for a cycle
        return mix


def by_group(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of own time per group (``IDLE`` included), largest first."""
    raw = stats.stats  # type: ignore[attr-defined]
    attribution = _Attribution(raw)
    totals: dict[str, float] = {}
    for func, (_, _, tottime, _, _) in raw.items():
        for group, share in attribution.shares(func).items():
            totals[group] = totals.get(group, 0.0) + tottime * share
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def top_functions(stats: pstats.Stats, count: int) -> list[tuple[str, float, int]]:
    """The ``count`` project functions with the most own time: (``module:line name``, seconds, calls)."""
    raw = stats.stats  # type: ignore[attr-defined]
    rows = []
    for (path, line, name), (_, calls, tottime, _, _) in raw.items():
        normal = path.replace("\\", "/")
        if P in normal:
            rows.append((f"{normal.split(P, 1)[1]}:{line} {name}", tottime, calls))
    return sorted(rows, key=lambda row: -row[1])[:count]


__all__ = ["GROUPS", "IDLE", "OTHER", "SHARED", "by_group", "direct_group", "top_functions"]
