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
* :class:`HarnessBug` — the harness failed a check of itself (:mod:`~sdcp_conformance.harness.self_check`): a
  message it built does not match the CDDL, or a fault it injected never took effect. The case is ERROR
  ("harness bug: …"), never blamed on the implementation under test.
* Everything else escaping a case is a bug in this package.
"""

from __future__ import annotations


class SdcpConformanceError(Exception):
    """Root of every exception this package raises on purpose."""


class InvalidArgument(SdcpConformanceError, ValueError):
    """The caller passed something this package cannot work with."""


class HarnessBug(SdcpConformanceError):
    """The harness broke its own rules in a case: it sent a message that does not match ``sdcp.cddl``, or a fault
    the case relies on never took effect. The runner reports the case ERROR, "harness bug: …"."""


__all__ = ["HarnessBug", "InvalidArgument", "SdcpConformanceError"]
