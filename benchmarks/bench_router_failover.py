"""Failover under fire: the reference router through ≥ 20 verifier kills and partitions, checked token by token.

The harness plays three verifiers, three drafters and the MLC around the
embedded reference router (as ``certify --role router`` does). Several
sessions are opened at the router's test front; then, round after round, the
verifiers commit tokens and the verifier serving one of the sessions is
killed (its status expires and it answers nothing) or partitioned (its status
expires but it keeps serving its old epoch and appends past the fence, into an
MLC that does not enforce fences), and is revived after the failover. The
history checker runs after every step; at the end every session is finished
and its output read through the front from index 0, and compared with the
committed output of its commit log (records no higher fence precedes).

    python benchmarks/bench_router_failover.py [--faults 24] [--sessions 4] [--seed 1]

Figures printed: faults injected, failovers completed, failover time
(fault to resumed session with a new assignment), tokens committed, delivered,
lost and duplicated, zombie tokens written past fences (never to be delivered).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import Counter

from sdcp_conformance.cache.commit_log import CommitRecord
from sdcp_conformance.fuzz.rules.failover_steps import FailoverExecutor
from sdcp_conformance.fuzz.steps import Step
from sdcp_conformance.harness.roles.router_truth import counted
from sdcp_conformance.harness.specs.router import RouterEnvironment


async def bench(faults: int, sessions: int, seed: int) -> int:
    env = await RouterEnvironment.start(None)
    executor = FailoverExecutor(env, f"bench-{seed}")
    started = time.perf_counter()
    try:
        await executor.apply(Step("setup", {"enforcing": False}))
        for index in range(sessions):
            await executor.apply(Step("open", {"prompt": index}))
        kills = partitions = 0
        for round_ in range(faults):
            for index in range(sessions):
                await executor.apply(Step("commit", {"s": index, "n": 1 + (round_ + index + seed) % 3}))
            target = (round_ + seed) % sessions
            if round_ % 2:
                await executor.apply(Step("kill", {"s": target}))
                kills += 1
            else:
                await executor.apply(Step("partition", {"s": target, "late": 2}))
                partitions += 1
            for name in sorted(executor.down.verifiers):  # revive, so two verifiers are always there
                await executor.apply(Step("revive", {"i": list(env.verifiers).index(name)}))
        for index in range(sessions):
            await executor.apply(Step("commit", {"s": index, "n": 2}))
        fronts = list(executor.sessions)
        delivered: dict[bytes, list[int]] = {}
        for _ in fronts:
            await executor.apply(Step("finish", {"s": 0}))  # always the first still-live session
        for front in fronts:
            tokens, last = await env.front.read(front.id, until=lambda _t, out: out is not None and out.final,
                                                timeout_s=10.0)
            delivered[front.id] = tokens
            assert last is not None and last.final, "the front did not end the session's output"
        executor.check()
        elapsed = time.perf_counter() - started
        committed = lost = duplicated = total = 0
        for front in fronts:
            truth = counted(executor.log_of(front)).tokens  # the commit log, as the harness reads it
            got = delivered[front.id]
            committed += len(truth)
            total += len(got)
            missing = Counter(truth) - Counter(got)
            extra = Counter(got) - Counter(truth)
            lost += sum(missing.values())
            duplicated += sum(extra.values())
            if got != list(truth) and not missing and not extra:
                lost += 1  # same tokens in another order: an index moved
        zombie = 0
        for front in fronts:
            log = executor.log_of(front)
            kept = counted(log).records
            zombie += sum(len(record.emitted) for record in log if isinstance(record, CommitRecord)
                          and record not in kept)
        times = executor.failover_seconds
        print(f"faults injected          {kills + partitions} ({kills} kills, {partitions} partitions)")
        print(f"failovers completed      {executor.failovers}")
        if times:
            print(f"failover time            mean {statistics.mean(times) * 1000:.0f} ms, median "
                  f"{statistics.median(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms (fault to new assignment)")
        print(f"sessions                 {len(fronts)}")
        print(f"tokens committed         {committed}")
        print(f"tokens delivered (front) {total}")
        print(f"tokens lost              {lost}")
        print(f"tokens duplicated        {duplicated}")
        print(f"zombie tokens past fences {zombie} (written by partitioned verifiers; none may be delivered)")
        print("checker violations       0 (every step checked)")
        print(f"elapsed                  {elapsed:.1f} s")
        return 0 if lost == duplicated == 0 and executor.failovers >= 20 else 1
    finally:
        await executor.close()
        await env.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--faults", type=int, default=24, help="verifier kills and partitions (at least 20)")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(bench(max(20, args.faults), args.sessions, args.seed)))


if __name__ == "__main__":
    main()
