"""Moving h2's frames between a connection and its socket, shared by the project's HTTP/2 client and server and
the misbehaving test server: bytes read go in through :func:`receive_events`, the frames h2 queues in answer go
out through :func:`write_queued` or a :class:`FrameWriter`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from h2.connection import H2Connection
from h2.events import Event
from h2.exceptions import ProtocolError


def receive_events(connection: H2Connection, data: bytes, dispatch: Callable[[Event], None]) -> ProtocolError | None:
    """Feed ``data`` to ``connection`` and hand each event it yields to ``dispatch``.

    Returns the error when ``data`` breaks the protocol; no event is dispatched then (h2 has queued a GOAWAY naming
    the error, which the caller still has to write).
    """
    try:
        events = connection.receive_data(data)
    except ProtocolError as exc:
        return exc
    for event in events:
        dispatch(event)
    return None


def write_queued(connection: H2Connection, transport: asyncio.Transport | None) -> None:
    """Write the frames ``connection`` has queued, unless its transport is gone or closing."""
    data = connection.data_to_send()
    if data and transport is not None and not transport.is_closing():
        transport.write(data)


class FrameWriter:
    """One connection's writes: :meth:`flush` at once, or :meth:`flush_soon`, which coalesces the frames of every
    stream started or answered in this loop iteration into one write at its end."""

    def __init__(
        self,
        connection: H2Connection,
        loop: asyncio.AbstractEventLoop,
        transport: Callable[[], asyncio.Transport | None],
    ) -> None:
        self._connection = connection
        self._loop = loop
        self._transport = transport
        """The connection's transport as it is when a write happens (``None`` before it is made)."""
        self._pending = False

    def flush_soon(self) -> None:
        if not self._pending:
            self._pending = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        self._pending = False
        write_queued(self._connection, self._transport())


__all__ = ["FrameWriter", "receive_events", "write_queued"]
