"""D-JUDGE-REFUSED-CLIENT: when nothing of the IUT's arrives, the clients the harness's servers refused are the cause.

An IUT that offers TLS 1.2, presents no certificate or speaks HTTP/1.1 to the parties the harness plays never
gets a proposal, a session-open or a q_rows GET through, and a case waiting for one would blame the sentence it
is about ("no proposal arrived within 10 s", R-6.5.2-CONTINUE). §5.1 is what broke: "HTTP/2 [RFC9113] or HTTP/3
[RFC9114] over TLS 1.3 [RFC8446] with mutual certificate authentication is REQUIRED." So a case that stops on a
finding while the harness's servers have refused a client since the case began is judged on
``R-5.1-MTLS-CLIENT`` (an ambient row) with the refusals as evidence, and the finding it stopped on keeps its
words. Only refusals for how a client spoke count (:class:`~sdcp_conformance.transport.server.RefusedConnection`:
a handshake that failed on TLS grounds, HTTP/1.1, an HTTP/2 protocol error), never a timeout or a dropped
socket, and a correct IUT is never refused: no case that would pass is changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from sdcp_conformance.transport.listeners import PartyServer

ROW = "R-5.1-MTLS-CLIENT"
TRANSPORT_ROWS = frozenset({"R-5.1-MTLS", ROW, "P1-TLS-1/HANDSHAKE", "P1-TLS-1/H2", "P1-TLS-1/HTTP1"})
"""Findings already about how the IUT speaks: never re-judged."""
SHOWN = 3


def describe_refused(servers: Iterable[PartyServer], since: float) -> str:
    """'' or a sentence naming what the servers refused since ``since`` (``time.monotonic()``), most frequent first."""
    counts: Counter[str] = Counter()
    parties: dict[str, list[str]] = {}
    for server in servers:
        for refusal in server.refused_since(since):
            what = refusal.describe()
            counts[what] += 1
            party = server.config.label or server.base_uri
            if party not in parties.setdefault(what, []):
                parties[what].append(party)
    if not counts:
        return ""
    parts = [f"{', '.join(parties[what])} refused {count} connection{'s' if count > 1 else ''} ({what})"
             for what, count in counts.most_common(SHOWN)]
    more = len(counts) - SHOWN
    tail = f", and {more} other kind{'s' if more > 1 else ''}" if more > 0 else ""
    return "the harness's " + "; ".join(parts) + tail


__all__ = ["ROW", "TRANSPORT_ROWS", "describe_refused"]
