"""What the HTTP/3 client's and server's connections share over aioquic's asyncio protocol: one transmit per
event-loop iteration.

aioquic's protocol builds and sends datagrams after every datagram it receives (``transmit``), and the client and
server call it again for every request and response they queue. Building a datagram is aioquic's costliest step in
pure Python, and most of those calls find only an acknowledgement to send, or nothing. Here a received datagram
and a queued request or response ask for a transmit at the end of the loop iteration (aioquic's own
``_transmit_soon``), so what the iteration queued leaves together, acknowledgements riding with data. Closing a
connection still transmits at once (its CONNECTION_CLOSE must leave before the socket closes).
"""

from __future__ import annotations

from typing import Any, cast

from aioquic.asyncio.protocol import QuicConnectionProtocol


class CoalescingProtocol(QuicConnectionProtocol):
    """A :class:`QuicConnectionProtocol` that transmits once per loop iteration (aioquic 1.7.2's private
    ``_process_events`` and ``_transmit_soon``; the version is checked where the connections are made)."""

    def datagram_received(self, data: bytes | str, addr: Any) -> None:
        self._quic.receive_datagram(cast(bytes, data), addr, now=self._loop.time())
        self._process_events()
        self._transmit_soon()

    def transmit_soon(self) -> None:
        """Send what is queued at the end of this loop iteration, with whatever else it queues."""
        self._transmit_soon()


__all__ = ["CoalescingProtocol"]
