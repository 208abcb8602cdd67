"""The context a case runs in, one per IUT role: what a case of that role's suite does through the played parties
(a verifier case proposes as a drafter, a drafter case answers proposals as the verifier, a router case opens
sessions as the front client). The judgements every context shares are :class:`~sdcp_conformance.harness.judging.
JudgedContext`'s; the played parties are :mod:`sdcp_conformance.harness.roles`'."""
