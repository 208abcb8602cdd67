"""Fuzzing a verifier IUT: Hypothesis-generated protocol sequences and hostile messages.

* :mod:`~sdcp_conformance.fuzz.stateful` — a ``RuleBasedStateMachine`` that
  drives the IUT through the harness roles (router, drafters, cache) and checks
  every step against :mod:`~sdcp_conformance.fuzz.model`, the harness's own
  account of what a correct verifier must answer;
* :mod:`~sdcp_conformance.fuzz.scaffold` — what the stateful fuzzers of every
  role (verifier, drafter, router) share: stats, runner, machine base, replay;
* :mod:`~sdcp_conformance.fuzz.messages` — generated CBOR for every request
  type (valid, boundary, malformed) with a canary session checked after each;
* :mod:`~sdcp_conformance.fuzz.replay` — failures saved as the generated
  choices themselves (rule names and arguments), replayed exactly;
* :mod:`~sdcp_conformance.fuzz.identity` — the IUT a failure was found
  against, recorded in its replay file; a replay runs against that IUT only.

Hypothesis is imported only by the modules that need it, so the rest of the
package works without it.
"""
