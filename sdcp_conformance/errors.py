"""The package's one error tree.

Three kinds of failure are kept apart, as h11 and Hypothesis do:

* :class:`~sdcp_conformance.protocol.errors.ProtocolError` (in ``protocol/``, beside the problem types it
  carries) — a party broke SDCP. It carries the problem type
  (Table 2 of the draft, plus the profile's ``sdcp-bad-message``) and the HTTP
  status, so the layer that answers a request translates it once, at the
  boundary. Against an implementation under test it becomes a verdict, never a
  crash.
* :class:`InvalidArgument` — the harness or the library was misused by its
  caller (a bad option, an impossible configuration).
* Everything else escaping a case is a bug in this package.
"""

from __future__ import annotations


class SdcpConformanceError(Exception):
    """Root of every exception this package raises on purpose."""


class InvalidArgument(SdcpConformanceError, ValueError):
    """The caller passed something this package cannot work with."""


__all__ = ["InvalidArgument", "SdcpConformanceError"]
