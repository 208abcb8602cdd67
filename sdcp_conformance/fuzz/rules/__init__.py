"""Each role's own part of the fuzzers, and nothing else: what is generated, how it is played, what is judged.

A role's module (:mod:`~sdcp_conformance.fuzz.rules.verifier`,
:mod:`~sdcp_conformance.fuzz.rules.drafter`,
:mod:`~sdcp_conformance.fuzz.rules.failover` for a router) holds its rules on
a :class:`~sdcp_conformance.fuzz.scaffold.FuzzMachine`, its
:class:`~sdcp_conformance.fuzz.scaffold.Runner` and its
:class:`~sdcp_conformance.fuzz.campaign.Role`, with the campaign's entry
points; its ``*_steps`` module holds its executor (on
:class:`~sdcp_conformance.fuzz.executor.RoleExecutor`), which plays each rule
against the IUT and judges what it answers. The scaffold, the executor base
and the campaign loop are the package's, one for every role.
"""
