"""Tokens per second and tokens per round of the reference stack, per draft model, vs §6.2's formula.

For each (target, drafter, rule) the script runs sessions through the whole
stack on loopback (real TLS) and prints:

* tokens/s — committed output tokens over wall time of the sessions;
* tokens/round — mean tokens committed per verified round (a + 1, before truncation);
* alpha — the measured per-position acceptance rate: accepted positions over
  evaluated positions (each round evaluates a positions that pass and, if a < M,
  one that fails);
* predicted — §6.2's expected tokens per round, (1 - alpha^(M+1)) / (1 - alpha)
  (M + 1 when alpha = 1), averaged over the rounds' own M.

Usage: python benchmarks/bench_stack.py [--tokens 200] [--sessions 4]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.models.registry import load_manifest, mock_model
from sdcp_conformance.protocol.control import Action
from sdcp_conformance.protocol.speculation import expected_tokens
from sdcp_conformance.reference.client import StackClient
from sdcp_conformance.reference.contracts import stack_contract
from sdcp_conformance.reference.stack import Stack, StackOptions

CASES = (
    ("ctx", "ctx-draft-near", 1),
    ("ctx", "ctx-draft-far", 1),
    ("bigram", "bigram-draft-near", 2),
    ("bigram", "bigram-draft-far", 2),
)


async def measure(target: str, drafter: str, rule: int, tokens: int, sessions: int) -> dict[str, float]:
    contract = stack_contract(
        Checkpoint.open(mock_model(target).path), [Checkpoint.open(mock_model(drafter).path)], rule=rule,
        max_new=tokens, m_max=8, low_rounds=10_000, fallback=[Action.REDUCE], seed=7 if rule == 2 else None,
        temperature_milli=1000 if rule == 2 else None,
    )
    prompt = list(load_manifest().greedy_prompts().prompts[0].tokens) if target == "ctx" else [5]
    with tempfile.TemporaryDirectory() as folder:
        stack = await Stack.start(Path(folder), StackOptions(target=target, drafters=(drafter,)))
        client = StackClient(stack.uris["router"], stack.tls("client"))
        try:
            started = time.perf_counter()
            results = await asyncio.gather(*(client.generate(contract, prompt) for _ in range(sessions)))
            elapsed = time.perf_counter() - started
            verifier = stack.roles["verifier-1"].app
            rounds = []
            for result in results:
                machine = verifier.sessions[result.session].machine
                verdicts = machine.verdicts()
                rounds += [(machine.proposed[r], verdicts[r].accepted) for r in sorted(verdicts)]
        finally:
            await client.aclose()
            await stack.stop()
    produced = sum(len(result.tokens) for result in results)
    accepted = sum(a for _, a in rounds)
    evaluated = sum(a + (1 if a < m else 0) for m, a in rounds)
    alpha = accepted / evaluated
    predicted = sum(expected_tokens(alpha, m) for m, _ in rounds) / len(rounds)
    return {
        "tokens_per_s": produced / elapsed,
        "tokens_per_round": sum(a + 1 for _, a in rounds) / len(rounds),
        "mean_m": sum(m for m, _ in rounds) / len(rounds),
        "alpha": alpha,
        "predicted": predicted,
    }


async def main(tokens: int, sessions: int) -> None:
    table = Table(title=f"reference stack, {sessions} concurrent sessions x {tokens} tokens, CPU")
    for column in ("target", "drafter", "rule", "tokens/s", "mean M", "alpha", "tokens/round", "§6.2 predicted"):
        table.add_column(column)
    for target, drafter, rule in CASES:
        row = await measure(target, drafter, rule, tokens, sessions)
        table.add_row(target, drafter, str(rule), f"{row['tokens_per_s']:.0f}", f"{row['mean_m']:.2f}",
                      f"{row['alpha']:.3f}", f"{row['tokens_per_round']:.2f}", f"{row['predicted']:.2f}")
    Console(width=150).print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=4)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.tokens, arguments.sessions))
