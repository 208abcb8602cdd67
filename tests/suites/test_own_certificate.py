"""P1-ID-1 at the IUT's own server: the certificate it presents names its base URI (VER/DRF/RTR-5.1-TRANSPORT-*).

The TLS handshake checks the CA and the hostname only, and every party on a host shares its name: before these
cases a verifier serving with the router's certificate passed every case.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from sdcp_conformance.harness.case import Verdict
from sdcp_conformance.harness.certify import certify
from sdcp_conformance.harness.check import NON_STRICT, OK, Preflight, preflight
from sdcp_conformance.harness.iut import Answer
from sdcp_conformance.harness.judging import JudgedContext
from sdcp_conformance.harness.runner import RunReport
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.suites.transport_judging import judge_own_certificate
from sdcp_conformance.testing.misbehaving import MisbehavingServer, Mode
from sdcp_conformance.testing.targets import local_target, misbehaving_config, reference_app
from sdcp_conformance.transport.failures import ConnectionInfo
from sdcp_conformance.transport.pki import load_pki
from sdcp_conformance.transport.tls import names_party

BASE = "https://127.0.0.1:9001/verifier/"
T = TypeVar("T")


class Recorder:
    """The two calls the judge makes of a case context."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.deviations: list[tuple[str, str, Any]] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def deviate(self, row: str, message: str, *, expected: Any = (), actual: str = "") -> None:
        self.deviations.append((row, message, expected))


async def _answer(uris: tuple[str, ...]) -> Answer:
    return Answer(400, b"", None, connection=ConnectionInfo(1, "TLSv1.3", "h2", uris))


def _judge(uris: tuple[str, ...]) -> Recorder:
    recorder = Recorder()
    asyncio.run(judge_own_certificate(cast(JudgedContext, recorder), _answer(uris), "a request", "the verifier",
                                      BASE))
    return recorder


@pytest.mark.parametrize("uris", [(BASE,), ("HTTPS://127.0.0.1:9001/verifier/",)], ids=["same", "scheme-case"])
def test_a_certificate_naming_the_base_uri_passes(uris: tuple[str, ...]) -> None:
    recorder = _judge(uris)
    assert recorder.deviations == []
    assert any(BASE in note for note in recorder.notes)


@pytest.mark.parametrize(("uris", "words"), [
    (("https://127.0.0.1:9003/router/",), "the URI SAN https://127.0.0.1:9003/router/"),
    (("https://127.0.0.1:9001/Verifier/",), "the URI SAN https://127.0.0.1:9001/Verifier/"),
    (("https://127.0.0.1:9001/verifier",), "the URI SAN https://127.0.0.1:9001/verifier,"),
    ((), "no URI SAN"),
    ((BASE, "https://127.0.0.1:9003/router/"), "2 URI SANs"),
], ids=["another-party", "path-case", "no-trailing-slash", "none", "two"])
def test_a_certificate_naming_anything_else_is_a_profile_deviation(uris: tuple[str, ...], words: str) -> None:
    recorder = _judge(uris)
    [(row, message, expected)] = recorder.deviations
    assert row == "P1-ID-1/OWN-CERTIFICATE"
    assert words in message and BASE in message
    assert list(expected) == [BASE]


def test_preflight_and_certification_name_a_party_alike() -> None:
    """`check`'s certificate line and these cases call one function (D-TLS-3): scheme and host case-insensitive,
    the rest as written, exactly one URI SAN."""
    assert names_party((BASE,), BASE)
    assert names_party(("https://127.0.0.1:9001/verifier/",), "HTTPS://127.0.0.1:9001/verifier/")
    assert not names_party(("https://127.0.0.1:9001/verifier",), BASE)
    assert not names_party((BASE, BASE), BASE) and not names_party((), BASE)


async def _served_with(folder: Path, party: str, work: Callable[[TargetConfig], Awaitable[T]]) -> T:
    """``work(target)`` while the reference verifier's app is served at the target's base URI with ``party``'s
    certificate (the CA's, naming that party's base URI)."""
    target = local_target(folder, request_timeout_s=5.0)
    pki = load_pki(target.pki)
    async with reference_app(target) as app:
        config = dataclasses.replace(misbehaving_config(target, Mode.TRAILERS, app), cert=pki.cert(party),
                                     key=pki.key(party))
        async with MisbehavingServer(config):
            return await work(target)


@pytest.mark.parametrize(("party", "verdict"), [("verifier", Verdict.PASSED), ("router", Verdict.NON_STRICT)])
def test_a_verifier_serving_with_another_partys_certificate_is_non_strict(
        tmp_path: Path, party: str, verdict: Verdict) -> None:
    """Over a real handshake: the reference verifier's app, served with its own certificate or the router's."""
    async def run(target: TargetConfig) -> RunReport:
        return await asyncio.wait_for(certify(target, selectors=["VER-5.1-TRANSPORT-011"], seed=3), 120)

    report = asyncio.run(_served_with(tmp_path, party, run))
    [judged] = [result for result in report.results if result.case.id == "VER-5.1-TRANSPORT-011"]
    assert judged.verdict is verdict, judged.message
    if verdict is Verdict.NON_STRICT:
        assert "URI SAN https://127.0.0.1:" in judged.message and "/router/, not its base URI" in judged.message
        assert "/verifier/" in judged.message


@pytest.mark.parametrize(("party", "outcome"), [("verifier", OK), ("router", NON_STRICT)])
def test_the_preflight_says_it_at_the_same_level(tmp_path: Path, party: str, outcome: str) -> None:
    """`check`: the certificate line warns (P1-ID-1, NON-STRICT) and the IUT is still ready to be certified, as the
    run would pass; it does not say "not ready" for what certification lets pass."""
    async def run(target: TargetConfig) -> tuple[TargetConfig, Preflight]:
        return target, await asyncio.to_thread(preflight, target)

    target, result = asyncio.run(_served_with(tmp_path, party, run))
    [line] = [check for check in result.checks if check.name == "certificate"]
    assert line.outcome == outcome, line.detail
    assert result.ok
    if outcome == NON_STRICT:
        assert f"is not the base URI {target.base_uri} (P1-ID-1" in line.detail and "/router/" in line.detail
