"""One cause, one finding (P1-JUDGE-4) against every misbehaving-server mode: the transport cases and the preflight.

A server that hangs, drips, resets, says GOAWAY or sends a huge body after a
TLS handshake that succeeded has not refused anyone's certificate: the
transport cases must not report mutual TLS failures for it (their valid-client
control fails for another cause, so they are INCOMPLETE, naming it), and the
preflight must not ask whether it trusts the CA. Only the modes whose
handshake itself shuts a valid client out (or that never ask for a client
certificate) may fail R-5.1-MTLS — and those must.
"""

from __future__ import annotations

import asyncio
import errno
import functools
from pathlib import Path

import pytest

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.check import FAIL, preflight
from sdcp_conformance.harness.runner import RunReport
from sdcp_conformance.judge import Verdict as Severity
from sdcp_conformance.testing.misbehaving import CONFORMANT, MisbehavingServer, Mode
from sdcp_conformance.testing.targets import local_target, misbehaving_config, reference_app

REQUEST_TIMEOUT_S = 1.0
RUN_DEADLINE_S = 240.0
MTLS_CAUSES = {
    Mode.TLS12_ONLY: "TLS alert",  # a valid client offering TLS 1.3 is refused at the handshake
    Mode.HTTP11_ONLY: "ALPN",  # the handshake selects http/1.1: no HTTP/2 for anyone
    Mode.OTHER_CA: "could not verify",  # the harness cannot authenticate the server
    Mode.NO_CLIENT_CERT_REQUEST: "did not require a client certificate",  # it serves anyone
}
"""The modes on which a transport case must fail R-5.1-MTLS, with words its finding names the cause by."""
SERVED_WRONGLY = {Mode.WRONG_MEDIA_TYPE, Mode.CBOR_AS_HTML, Mode.GARBAGE_CBOR, Mode.WRONG_SHAPE}
"""Valid-looking session-opens answered with a body that is not a session-state: the preflight's models line fails."""


BIND_ATTEMPTS = 3
"""Free ports are free only until someone else binds them (another test worker): drawn again this many times."""


async def _run(mode: Mode, folder: Path) -> tuple[RunReport, list[str]]:
    for attempt in range(1, BIND_ATTEMPTS + 1):
        try:
            return await _run_once(mode, folder / f"attempt-{attempt}")
        except OSError as error:
            if error.errno != errno.EADDRINUSE or attempt == BIND_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


async def _run_once(mode: Mode, folder: Path) -> tuple[RunReport, list[str]]:
    folder.mkdir(parents=True)
    target = local_target(folder, request_timeout_s=REQUEST_TIMEOUT_S, output_timeout_s=3.0,
                          max_response_bytes=1 << 20)
    async with reference_app(target) as app:
        config = misbehaving_config(target, mode, app, drip_interval_s=0.25, late_s=REQUEST_TIMEOUT_S * 3,
                                    valid_requests=2, goaway_every=2)
        async with MisbehavingServer(config):
            checked = await asyncio.get_running_loop().run_in_executor(
                None, functools.partial(preflight, target, timeout_s=REQUEST_TIMEOUT_S))
            report = await asyncio.wait_for(certify(target, selectors=["transport"], seed=12), RUN_DEADLINE_S)
            return report, checked.lines()


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(Mode), ids=lambda mode: mode.value)
def test_transport_cases_and_preflight_name_only_the_cause_they_saw(mode: Mode, tmp_path: Path) -> None:
    report, lines = asyncio.run(_run(mode, tmp_path))
    results = report.results
    assert Verdict.ERROR not in [result.verdict for result in results], [r.message for r in results]
    mtls = [f"{result.case.id}: {finding.message}" for result in results for finding in result.findings
            if finding.row == "R-5.1-MTLS" and finding.severity is Severity.FAILED]
    if mode in MTLS_CAUSES:
        assert any(MTLS_CAUSES[mode].lower() in message.lower() for message in mtls), mtls
    else:
        assert not mtls, mtls
    for result in results:
        if result.verdict is Verdict.INCOMPLETE:
            assert result.message.startswith("incomplete: "), result.message
            assert ("the handshake was not refused" in result.message
                    or "got no handshake to judge" in result.message), result.message
    if mode in CONFORMANT:  # the HTTP/3 listener's cases skip: this server speaks HTTP/2 only, as its target says
        assert all(result.verdict in (Verdict.PASSED, Verdict.INFORMATIONAL)
                   or (result.verdict is Verdict.SKIPPED and result.case.requires == ("http:3",))
                   for result in results), [(r.case.id, r.verdict, r.message) for r in results]
    text = "\n".join(lines)
    assert "does it trust the CA" not in text, text  # no mode refuses the harness's certificate with an alert
    models = next(line for line in lines if "] models:" in line)
    if mode in SERVED_WRONGLY:
        assert models.startswith(f"[{FAIL:>4}]"), text
    print(f"\nCAUSES {mode.value:24} {sorted({r.verdict.value for r in results})} | {models[:100]}")
