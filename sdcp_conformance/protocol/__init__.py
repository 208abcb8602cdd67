"""The SDCP protocol core: pure functions and small state machines, no I/O.

Nothing here reads a socket, a clock or a random source by itself; randomness
is passed in (see :mod:`.rng`). Module by module:

* :mod:`.codec` — deterministic CBOR encoding, bounded decoding, diagnostics;
* :mod:`.messages` — typed messages of §4.1/§5.2; :mod:`.cddl` — the schema;
* :mod:`.chain`, :mod:`.rng` — digests (§4.1, §4.2) and HMAC uniforms (§6.4);
* :mod:`.sampling`, :mod:`.rules` — p (§4.1) and acceptance rules 1 and 2 (§6.4);
* :mod:`.control`, :mod:`.speculation` — escalation (§6.5) and the choice of M (§6.2);
* :mod:`.problems`, :mod:`.contract` — problem types and contract validation.
"""

from sdcp_conformance.protocol.chain import contract_digest, extend_digest, prefix_digest
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.control import Action, SpeculationControl
from sdcp_conformance.protocol.problems import ProblemType
from sdcp_conformance.protocol.rng import verify_uniform
from sdcp_conformance.protocol.rules import rule1, rule2, truncate
from sdcp_conformance.protocol.sampling import draw_token, greedy_token, target_distribution
from sdcp_conformance.protocol.speculation import choose_m

__all__ = [
    "Action",
    "ProblemType",
    "SpeculationControl",
    "choose_m",
    "contract_digest",
    "decode",
    "draw_token",
    "encode",
    "extend_digest",
    "greedy_token",
    "prefix_digest",
    "rule1",
    "rule2",
    "target_distribution",
    "truncate",
    "verify_uniform",
]
