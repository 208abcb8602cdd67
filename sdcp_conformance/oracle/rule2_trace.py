"""A rule-2 e-process that keeps what the HTML report plots: the e-value per round, and emissions observed vs expected.

:class:`~sdcp_conformance.oracle.statistics.Rule2EProcess` judges; this
subclass only records, after each of its rounds, the log e-value, and sorts
the round's outcome into "k tokens emitted" (1 … M+1, after stop-token
truncation, §6.3), the coarsest observable that every design shares. For
each k it sums, over the counted rounds, the exact probability (the
expected count), the lowest and highest probability any verifier within the
tolerance could give the event (from the law's cell-wise bounds: the
tightest interval of a distribution boxed by them) and the variance, so the
report draws observed counts against expected ones with a band of
[lowest - 2 sd, highest + 2 sd] (D-RPT-4). The band is a picture, not the
test: the e-process judges the full outcome, cell by cell. The trace is JSON-ready
(:meth:`TracedEProcess.trace`) and attached to the case's result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from sdcp_conformance.oracle.statistics import FamilyLaws, RoundLaw, Rule2EProcess

TRACE_KIND = "rule2-eprocess"
"""The attachment's ``kind``: what the HTML report recognises as an e-process to plot."""

MAX_POINTS = 2000
"""At most this many trajectory points are kept (evenly thinned, the last one always kept): report.json stays small."""


def emitted_lengths(law: RoundLaw) -> npt.NDArray[np.int64]:
    """Per cell of ``law``, how many tokens its emission holds: min(a, first stop index) + 1 (§6.3 truncation)."""
    m, v = law.m, law.p.shape[1]
    first = next((i for i, token in enumerate(law.tokens) if token in law.stop), None)
    accepted = np.repeat(np.arange(m + 1), v).reshape(m + 1, v)
    lengths = (np.minimum(accepted, first) if first is not None else accepted) + 1
    per_cell = np.zeros(law.cells, dtype=np.int64)
    per_cell[law.labels.ravel()] = lengths.ravel()
    return per_cell


@dataclass
class TracedEProcess(Rule2EProcess):
    """:class:`Rule2EProcess`, plus the record of every round it was fed."""

    log_e_path: list[float | None] = field(default_factory=list)
    """log e after each counted round; None once a decisive (impossible) outcome made it infinite."""
    observed: dict[int, int] = field(default_factory=dict)
    expected: dict[int, float] = field(default_factory=dict)
    lower: dict[int, float] = field(default_factory=dict)
    upper: dict[int, float] = field(default_factory=dict)
    variance: dict[int, float] = field(default_factory=dict)
    impossible: int = 0
    """Rounds whose emission no rule-2 outcome (within the tolerance) produces."""

    def update(self, law: RoundLaw, cell: int | None, what: str = "",
               family_laws: FamilyLaws | None = None) -> None:
        super().update(law, cell, what, family_laws)
        lengths = emitted_lengths(law)
        size = law.m + 2
        exact = np.bincount(lengths, weights=law.exact_cells, minlength=size)
        low_in = np.bincount(lengths, weights=law.lower_cells, minlength=size)
        high_in = np.bincount(lengths, weights=law.upper_cells, minlength=size)
        low_all, high_all = float(law.lower_cells.sum()), float(law.upper_cells.sum())
        for k in range(1, law.m + 2):
            # The tightest bounds on P(k tokens) over laws with lower <= P <= upper cell-wise that sum to 1.
            low = max(float(low_in[k]), 1.0 - (high_all - float(high_in[k])), 0.0)
            high = min(float(high_in[k]), 1.0 - (low_all - float(low_in[k])), 1.0)
            share = min(1.0, max(0.0, float(exact[k])))  # a sum of floats may overshoot 1 by an ulp
            self.expected[k] = self.expected.get(k, 0.0) + share
            self.lower[k] = self.lower.get(k, 0.0) + min(low, share)
            self.upper[k] = self.upper.get(k, 0.0) + max(high, share)
            self.variance[k] = self.variance.get(k, 0.0) + share * (1.0 - share)
        if cell is None or not law.possible[cell]:
            self.impossible += 1
        if cell is not None:
            k = int(lengths[cell])
            self.observed[k] = self.observed.get(k, 0) + 1
        log_e = self.log_e
        self.log_e_path.append(None if math.isinf(log_e) else round(log_e, 4))

    def trace(self) -> dict[str, Any]:
        """The JSON-ready record (``kind`` :data:`TRACE_KIND`)."""
        ks = sorted(set(self.expected) | set(self.observed))
        sd = {k: math.sqrt(max(0.0, self.variance.get(k, 0.0))) for k in ks}
        rounds = list(range(1, len(self.log_e_path) + 1))
        path = self.log_e_path
        if len(path) > MAX_POINTS:
            step = math.ceil(len(path) / MAX_POINTS)
            keep = [*range(0, len(path) - 1, step), len(path) - 1]
            rounds, path = [rounds[i] for i in keep], [path[i] for i in keep]
        return {
            "kind": TRACE_KIND, "alpha": self.alpha, "threshold": self.threshold, "rounds": self.rounds,
            "rejected": self.rejected, "decisive": self.decisive, "impossible": self.impossible,
            "trajectory": {"round": rounds, "log_e": path},
            "emitted": {
                "tokens": ks,
                "observed": [self.observed.get(k, 0) for k in ks],
                "expected": [round(self.expected.get(k, 0.0), 4) for k in ks],
                "band_low": [round(max(0.0, self.lower.get(k, 0.0) - 2 * sd[k]), 4) for k in ks],
                "band_high": [round(self.upper.get(k, 0.0) + 2 * sd[k], 4) for k in ks],
            },
        }


__all__ = ["MAX_POINTS", "TRACE_KIND", "TracedEProcess", "emitted_lengths"]
