"""Plots for the HTML report, drawn by matplotlib (Agg) as SVG text to inline: no files, no network.

Two plots per statistical case (an attachment of kind ``rule2-eprocess``,
:mod:`sdcp_conformance.oracle.rule2_trace`): how many rounds emitted k
tokens, observed against expected with the tolerance band, and the log
e-value round by round against its rejection threshold log(1/alpha).
matplotlib is imported here only, when a report is rendered.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from typing import Any

TRACE_KIND = "rule2-eprocess"
_PREAMBLE = re.compile(r"^.*?(?=<svg)", re.S)
_MARGINS = {"left": 0.11, "right": 0.98, "bottom": 0.16, "top": 0.9}
"""Fractions of the 5.6 x 2.8 in figure, room for the axis labels, tick labels and the title."""


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    pyplot.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "sdcp-conformance", "font.size": 9})
    return pyplot


def _svg(figure: Any, title: str) -> str:
    """The figure as an inline ``<svg>`` element with an accessible title (XML preamble removed)."""
    pyplot = _pyplot()
    buffer = io.StringIO()
    # Fixed margins, not bbox_inches="tight": "tight" draws every figure twice (a third of a report's writing
    # time went to plots). Both plots have the same size and at most 5-character tick labels, which these fit.
    figure.subplots_adjust(**_MARGINS)
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    pyplot.close(figure)
    svg = _PREAMBLE.sub("", buffer.getvalue(), count=1)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{title}" class="plot" ', 1)


def frequency_plot(trace: Mapping[str, Any]) -> str:
    """Rounds by tokens emitted: observed (bars) vs expected (markers) with the tolerance band (whiskers)."""
    pyplot = _pyplot()
    emitted = trace["emitted"]
    ks, observed, expected = emitted["tokens"], emitted["observed"], emitted["expected"]
    low, high = emitted["band_low"], emitted["band_high"]
    figure, axes = pyplot.subplots(figsize=(5.6, 2.8))
    axes.bar(ks, observed, color="#4c78a8", alpha=0.75, label="observed")
    axes.errorbar(ks, expected, yerr=[[e - lo for e, lo in zip(expected, low, strict=True)],
                                      [hi - e for e, hi in zip(expected, high, strict=True)]],
                  fmt="o", color="#e45756", ecolor="#e45756", capsize=3, label="expected, tolerance band")
    axes.set_xlabel("tokens emitted in the round")
    axes.set_ylabel("rounds")
    axes.set_xticks(ks)
    axes.legend(loc="best", frameon=False)
    axes.set_title(f"outcome frequencies over {trace['rounds']} counted rounds")
    return _svg(figure, "observed vs expected outcome frequencies")


def evalue_plot(trace: Mapping[str, Any]) -> str:
    """log e-value per round against log(1/alpha); a decisive (impossible) outcome is marked."""
    pyplot = _pyplot()
    path = trace["trajectory"]
    rounds, values = path["round"], path["log_e"]
    finite = [(r, v) for r, v in zip(rounds, values, strict=True) if v is not None]
    figure, axes = pyplot.subplots(figsize=(5.6, 2.8))
    if finite:
        axes.plot([r for r, _ in finite], [v for _, v in finite], color="#4c78a8", label="log e-value")
    threshold = float(trace["threshold"])
    axes.axhline(threshold, color="#e45756", linestyle="--",
                 label=f"threshold log(1/alpha) = {threshold:.1f} (alpha {float(trace['alpha']):.2g})")
    infinite = [r for r, v in zip(rounds, values, strict=True) if v is None]
    if infinite:
        axes.axvline(infinite[0], color="#b279a2", linestyle=":", label=f"impossible outcome at round {infinite[0]}")
    low = min([v for _, v in finite] + [0.0])
    axes.set_ylim(min(low, -1.0) * 1.1, max(threshold * 1.15, max([v for _, v in finite] + [0.0]) * 1.1, 1.0))
    from matplotlib.ticker import MaxNLocator

    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("counted round")
    axes.set_ylabel("log e")
    axes.legend(loc="best", frameon=False)
    stopped = "rejected" if trace.get("rejected") else "not rejected"
    axes.set_title(f"e-process: {stopped}")
    return _svg(figure, "e-value trajectory against its threshold")


def case_plots(attachments: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every plot of a case's attachments: ``[{name, caption, svg}]``."""
    plots = []
    for name, data in sorted(attachments.items()):
        if isinstance(data, Mapping) and data.get("kind") == TRACE_KIND and data.get("rounds"):
            decisive = f" Decisive event: {data['decisive']}." if data.get("decisive") else ""
            plots.append({"name": f"{name}-frequencies", "svg": frequency_plot(data),
                          "caption": "Rounds by number of tokens emitted (after stop-token truncation): bars are "
                          "observed, dots the exact expectation, whiskers the band any verifier within the "
                          "tolerance stays in (its lowest/highest expectation, minus/plus two standard deviations)."})
            plots.append({"name": f"{name}-evalue", "svg": evalue_plot(data),
                          "caption": f"log e-value after each counted round; the case fails when it reaches "
                          f"log(1/alpha) = {float(data['threshold']):.2f}.{decisive}"})
    return plots


__all__ = ["TRACE_KIND", "case_plots", "evalue_plot", "frequency_plot"]
