"""Fuzzing a verifier, drafter or router IUT: Hypothesis-generated protocol sequences and hostile messages.

* :mod:`~sdcp_conformance.fuzz.scaffold` — the one state machine scaffold of
  every role's stateful fuzzer: stats, runner, machine base, replay;
* :mod:`~sdcp_conformance.fuzz.executor` — the one executor base, which plays
  an example's steps and judges each;
* :mod:`~sdcp_conformance.fuzz.campaign` — the one campaign loop: start the
  environment, fuzz for a budget or a number of examples, save, replay;
* :mod:`~sdcp_conformance.fuzz.rules` — each role's own rules and steps (the
  verifier's, checked against :mod:`~sdcp_conformance.fuzz.model`, the
  harness's own account of what a correct verifier must answer; the
  drafter's; the router failover campaign's);
* :mod:`~sdcp_conformance.fuzz.messages` — generated CBOR for every request
  type (valid, boundary, malformed) with a canary session checked after each;
* :mod:`~sdcp_conformance.fuzz.replay` — failures saved as the generated
  choices themselves (rule names and arguments), replayed exactly;
* :mod:`~sdcp_conformance.fuzz.identity` — the IUT a failure was found
  against, recorded in its replay file; a replay runs against that IUT only.

Hypothesis is imported only by the modules that need it, so the rest of the
package works without it.
"""
