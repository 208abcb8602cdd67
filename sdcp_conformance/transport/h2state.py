"""Two corrections to h2's connection state, shared by the project's HTTP/2 client and server.

1. **GOAWAY is not the end of the connection** (RFC 9113 §6.8): "Activity on
   streams numbered lower than or equal to the last stream identifier might
   still complete successfully." h2 4.x moves its whole connection state
   machine to CLOSED on sending *or* receiving GOAWAY, after which every
   further HEADERS or DATA — the answers still owed on streams ≤
   ``last_stream_id`` — raises ``ProtocolError``; it also throws away frames
   queued for sending. That is the false alarm of issue 12 (a conformant
   server ending a connection gracefully after N requests). Here the state
   machine stays open through GOAWAY and the connection code tracks the
   GOAWAY itself: no new streams, streams above ``last_stream_id`` treated as
   never processed, the connection closed once the rest are done.
2. **A frame's length is checked at its header** (RFC 9113 §4.2: a frame
   larger than SETTINGS_MAX_FRAME_SIZE is a FRAME_SIZE_ERROR). h2's frame
   buffer checks it only once the whole frame has arrived, so a peer that
   declares 16 MiB and trickles the bytes makes it buffer 16 MiB per
   connection. :class:`CheckedFrameBuffer` refuses the frame as soon as its
   nine header bytes are in, and reports every complete frame's header to an
   observer (the server's rate limits count RST_STREAM, SETTINGS, PING and
   empty DATA there, before h2 acts on them).
3. **The events before a protocol error are kept**: h2 parses every frame
   of a read before returning its events, and a frame that raises
   ``ProtocolError`` loses the events of the frames before it — a response's
   HEADERS arrive with its over-long body in one read, and the evidence of
   the error would say "no response headers". :attr:`GoawayAwareConnection.parsed_events`
   holds them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import h2.config
import h2.connection
from h2.connection import ConnectionInputs, ConnectionState, H2ConnectionStateMachine
from h2.events import Event
from h2.exceptions import FrameTooLargeError
from h2.frame_buffer import FrameBuffer
from hyperframe.frame import Frame

if TYPE_CHECKING:
    from h2._typing import Buffer  # h2's own spelling of PEP 688's buffer protocol (Python 3.12's Buffer)

FrameObserver = Callable[[int, int, int, int], None]
"""``observer(frame_type, flags, stream_id, length)``, called once per complete frame, before h2 parses it."""

FRAME_HEADER = 9
HEADERS_TYPE, CONTINUATION_TYPE = 0x1, 0x9
_OPEN = (ConnectionState.CLIENT_OPEN, ConnectionState.SERVER_OPEN)
_GOAWAY = (ConnectionInputs.SEND_GOAWAY, ConnectionInputs.RECV_GOAWAY)


class _OpenThroughGoaway(H2ConnectionStateMachine):
    """h2's connection state machine, except that GOAWAY leaves an open connection open (see module doc)."""

    def process_input(self, input_: ConnectionInputs) -> list[Event]:
        if input_ in _GOAWAY and self.state in _OPEN:
            return []
        result: list[Event] = super().process_input(input_)
        return result


class CheckedFrameBuffer(FrameBuffer):
    """h2's frame buffer, checking each frame's declared length at its header and reporting frames."""

    def __init__(self, *, server: bool, observer: FrameObserver | None = None) -> None:
        super().__init__(server=server)
        self._observer = observer

    def __next__(self) -> Frame:
        data = self._data  # h2's buffer of bytes not yet parsed; it always starts at a frame header
        if len(data) >= FRAME_HEADER:
            length = int.from_bytes(data[:3], "big")
            if length > self.max_frame_size:
                raise FrameTooLargeError(f"frame of {length} bytes declared; the limit is {self.max_frame_size}")
            if self._observer is not None and len(data) >= FRAME_HEADER + length:
                self._observer(data[3], data[4], int.from_bytes(data[5:9], "big") & 0x7FFFFFFF, length)
        frame = super().__next__()
        return frame

    @property
    def header_block_open(self) -> bool:
        """Whether a header block (HEADERS + CONTINUATION) has begun and not ended, or a HEADERS or
        CONTINUATION frame is still arriving: the peer holds the connection (RFC 9113 §6.10)."""
        if self._headers_buffer:
            return True
        data = self._data
        return len(data) >= FRAME_HEADER and data[3] in (HEADERS_TYPE, CONTINUATION_TYPE)

    @property
    def buffered(self) -> int:
        """Bytes received and not yet parsed into frames (at most one frame: bounded by the frame size)."""
        return len(self._data)


class GoawayAwareConnection(h2.connection.H2Connection):
    """An :class:`h2.connection.H2Connection` with the two corrections of this module installed."""

    def __init__(self, config: h2.config.H2Configuration, *, observer: FrameObserver | None = None) -> None:
        super().__init__(config)
        self.state_machine = _OpenThroughGoaway()
        self.incoming_buffer: CheckedFrameBuffer = CheckedFrameBuffer(server=not config.client_side,
                                                                      observer=observer)
        self.parsed_events: list[Event] = []
        """The events of the frames parsed so far in the current (or last) :meth:`receive_data`."""

    def receive_data(self, data: Buffer) -> list[Event]:
        self.parsed_events = []
        events: list[Event] = super().receive_data(data)
        return events

    def _receive_frame(self, frame: Frame) -> list[Event]:
        events: list[Event] = super()._receive_frame(frame)
        self.parsed_events.extend(events)
        return events

    def clear_outbound_data_buffer(self) -> None:
        """Keep queued frames: h2 calls this on receiving GOAWAY, but the connection goes on (see module doc)."""


__all__ = ["CheckedFrameBuffer", "FrameObserver", "GoawayAwareConnection"]
