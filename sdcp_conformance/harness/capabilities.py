"""What a target offers beyond the protocol (the ``requires`` of a case), and what a vendor sets to offer it.

A case that needs a capability the target lacks is SKIPPED, its reason naming the target-file key or option that
would let it run (P1-JUDGE-1: a skip is never silent about why).
"""

from __future__ import annotations

MAX_TIMEOUT_CASE_S = 10.0
"""A lost-by-silence drafter case runs only when the drafter's proposal timeout is known and at most this long
(``timeout:proposal``)."""


def skip_reason(missing: list[str]) -> str:
    """Why a case is SKIPPED against this target, naming the target-file key or option that would let it run."""
    return "the target lacks " + "; ".join(f"{need} ({how_to_enable(need)})" for need in missing)


def how_to_enable(need: str) -> str:
    """The target-file key (or option) that provides capability ``need``."""
    kind, _, value = need.partition(":")
    if need == "load:control":
        return ("set [target] load_hook = \"https://…\" (the harness PUTs {\"load\": N}) or load_command = "
                "\"… {load}\", a way for the harness to set the verifier's load; README: Load control")
    if need == "load:pinned":
        return "set [target] pinned_load = N, the load the verifier was started with"
    if need == "timeout:proposal":
        return (f"set [harness] proposal_timeout_s = N, the drafter's proposal timeout, if it is at most "
                f"{MAX_TIMEOUT_CASE_S:g} s")
    if kind == "model":
        return f"add \"{value}\" to [target] models, serving that mock model"
    if kind in ("verifiers", "drafters"):
        return f"list at least {value} base URIs in [harness] {kind}" + (
            " (and their drafter_models)" if kind == "drafters" else "")
    if kind == "http":
        other = "3" if value == "2" else "2"
        return (f"the IUT serves no HTTP/{value} listener (the target's http = \"{other}\"); §5.1 asks for HTTP/2 or "
                f"HTTP/3, and this case probes the HTTP/{value} one: http = \"both\" if the IUT serves both")
    if need == "embedded":
        return "only the embedded reference offers it: certify without --target"
    return "see the case's black-box note"


__all__ = ["MAX_TIMEOUT_CASE_S", "how_to_enable", "skip_reason"]
