"""The preflight: is the IUT a target file describes ready to be certified? One line per check.

The first thing a vendor runs (``sdcp-conformance check --target FILE``), and
what ``certify`` prints when the sanity case did not pass. In order, each
check saying what it saw:

1. **reachable** — the base URI's host and port accept a TCP connection;
2. **certificate** — its TLS certificate chains to the target's CA (and its
   URI SAN is the base URI, P1-ID-1); the fingerprint is kept for reports;
3. **client certificate** — it refuses a client without a certificate and
   accepts the harness's (§5.1 "with mutual certificate authentication");
4. **HTTP/2 over TLS 1.3** — the handshake negotiated TLS 1.3 and ALPN ``h2``,
   and the IUT answered the HTTP/2 preface with its SETTINGS;
5. **models** — a verifier opens a session for each model the target
   declares (``POST sessions`` as the harness's router, §6.1); a drafter or a
   router shows its models only inside a conversation, which the sanity case
   holds, so the line says so.

Plain :mod:`ssl` sockets with deadlines (:data:`TIMEOUT_S`); a check that
cannot run because an earlier one failed says so instead of failing again.
"""

from __future__ import annotations

import secrets
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sdcp_conformance.harness.check_lines import FAIL, NON_STRICT, OK, SKIP, Check
from sdcp_conformance.harness.target import TargetConfig
from sdcp_conformance.transport import event_loops
from sdcp_conformance.transport.tls import names_party, peer_uri_sans

TIMEOUT_S = 5.0
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""The client connection preface and an empty SETTINGS frame (RFC 9113 §3.4)."""
SETTINGS = 0x4
@dataclass(frozen=True)
class Preflight:
    checks: tuple[Check, ...]
    fingerprint: str | None
    """The IUT's certificate fingerprint (sha256:…), when its certificate was seen."""

    @property
    def ok(self) -> bool:
        return all(check.outcome != FAIL for check in self.checks)

    def lines(self) -> list[str]:
        return [check.line for check in self.checks]


def client_party(config: TargetConfig) -> str:
    """The harness identity the preflight speaks as: the router where the PKI has one, else a party not the IUT."""
    from sdcp_conformance.transport.pki import load_pki

    pki = load_pki(config.pki)
    if "router" in pki.parties and pki.base_uris["router"] != config.base_uri:
        return "router"
    return next(name for name, uri in pki.base_uris.items() if uri != config.base_uri)


def _address(base_uri: str) -> tuple[str, int]:
    parts = urlsplit(base_uri)
    return parts.hostname or "127.0.0.1", parts.port or 443


def _context(ca: Path, cert: Path | None, key: Path | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # so that a TLS 1.2-only IUT is reported, not just refused
    context.set_alpn_protocols(["h2", "http/1.1"])
    if cert is not None:
        context.load_cert_chain(cert, key)
    return context


@dataclass
class _Handshake:
    version: str | None = None
    alpn: str | None = None
    der: bytes | None = None
    uri_sans: tuple[str, ...] = ()
    error: str = ""
    verify_error: bool = False
    reply: bytes = b""
    refused: str = ""
    """How the IUT ended the connection after the handshake (alert, EOF, reset), if it did."""
    stalled: bool = False


def _handshake(config: TargetConfig, cert: Path | None, key: Path | None, timeout_s: float) -> _Handshake:
    """Handshake, send the HTTP/2 preface, read the first bytes back (or how the connection ended)."""
    host, port = _address(config.base_uri)
    seen = _Handshake()
    try:
        raw = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as exc:
        seen.error = f"{type(exc).__name__}: {exc}"
        return seen
    try:
        with _context(config.ca, cert, key).wrap_socket(raw, server_hostname=host) as tls:
            seen.version, seen.alpn = tls.version(), tls.selected_alpn_protocol()
            seen.der = tls.getpeercert(binary_form=True)
            peer: Any = tls.getpeercert() or {}
            seen.uri_sans = peer_uri_sans(peer)
            try:
                tls.sendall(H2_PREFACE)
                seen.reply = tls.recv(64)
                if not seen.reply:
                    seen.refused = "the connection was closed (EOF) without an answer"
            except ssl.SSLError as exc:
                seen.refused = f"TLS alert {exc.reason or exc}"
            except TimeoutError:
                seen.stalled = True
            except OSError as exc:
                seen.refused = f"{type(exc).__name__}: {exc}"
    except ssl.SSLCertVerificationError as exc:
        seen.error, seen.verify_error = exc.verify_message or str(exc), True
    except TimeoutError:
        seen.error, seen.stalled = f"no TLS handshake within {timeout_s:g} s", True
    except (ssl.SSLError, OSError) as exc:
        seen.error = f"{type(exc).__name__}: {exc}"
    finally:
        raw.close()
    return seen


def _is_settings(reply: bytes) -> bool:
    return len(reply) >= 9 and reply[3] == SETTINGS and reply[5:9] == b"\x00\x00\x00\x00"


def _certificate(config: TargetConfig, ours: _Handshake) -> Check:
    from sdcp_conformance.transport.certificates import fingerprint_der

    if ours.der is None:
        if ours.verify_error:
            return Check("certificate", FAIL, f"does not chain to the CA {config.ca}: {ours.error}")
        return Check("certificate", FAIL, f"no TLS handshake: {ours.error}")
    san = (f"URI SAN {ours.uri_sans[0]}" if len(ours.uri_sans) == 1 else f"URI SANs {list(ours.uri_sans)}")
    if not names_party(ours.uri_sans, config.base_uri):
        # The same reading as the transport cases' (judge_own_certificate): a profile deviation, NON-STRICT.
        return Check("certificate", NON_STRICT, f"chains to the CA, but its {san} is not the base URI "
                     f"{config.base_uri} (P1-ID-1; certification reports it NON-STRICT)")
    return Check("certificate", OK, f"chains to {config.ca}, {san}, {fingerprint_der(ours.der)}")


def _client_certificate(ours: _Handshake, anonymous: _Handshake, party: str) -> Check:
    """P1-JUDGE-4: the line names only what was seen. "Does it trust the CA?" only when the IUT refused the
    harness's certificate with a TLS alert; a connection that stalled or closed after the handshake is said as
    such (the HTTP/2 line judges it), not as a refused certificate."""
    if ours.der is None:
        return Check("client certificate", SKIP, "no handshake to judge")
    accepted = _is_settings(ours.reply)
    if anonymous.stalled:
        return Check("client certificate", FAIL, "a client without a certificate got no answer and no refusal "
                     "before the deadline (a hang is not a refusal, P1-JUDGE-3)")
    refused = bool(anonymous.refused or (anonymous.error and not anonymous.verify_error))
    if not refused:
        return Check("client certificate", FAIL, "a client without a certificate was served: the IUT does not "
                     "require one (§5.1 mutual certificate authentication)")
    how = anonymous.refused or anonymous.error
    if accepted:
        return Check("client certificate", OK, f"refuses a client without one ({how}); accepts the harness's {party}")
    if ours.refused.startswith("TLS alert"):
        return Check("client certificate", FAIL, f"refuses clients without a certificate, but also the harness's "
                     f"{party} certificate ({ours.refused}): does it trust the CA?")
    seen = ("no TLS alert and no answer to the HTTP/2 preface before the deadline" if ours.stalled
            else f"no TLS alert; then {ours.refused}" if ours.refused
            else f"no TLS alert; its reply {ours.reply[:16]!r} is not HTTP/2 SETTINGS")
    return Check("client certificate", SKIP, f"refuses a client without one ({how}); whether it accepts the "
                 f"harness's {party} is not known: {seen} (see the HTTP/2 line)")


def _http2(ours: _Handshake) -> Check:
    if ours.der is None:
        return Check("HTTP/2 over TLS 1.3", SKIP, "no handshake to judge")
    problems = []
    if ours.version != "TLSv1.3":
        problems.append(f"negotiated {ours.version}, not TLSv1.3")
    if ours.alpn != "h2":
        problems.append(f"ALPN {ours.alpn!r}, not 'h2'")
    if ours.reply and not _is_settings(ours.reply):
        problems.append(f"answered the HTTP/2 preface with {ours.reply[:16]!r}, not a SETTINGS frame")
    if problems:
        return Check("HTTP/2 over TLS 1.3", FAIL, "; ".join(problems))
    if ours.reply:
        return Check("HTTP/2 over TLS 1.3", OK, f"{ours.version}, ALPN h2, answered the preface with SETTINGS")
    seen = ("sent nothing after the preface before the deadline" if ours.stalled
            else f"ended the connection after the preface ({ours.refused})" if ours.refused
            else "sent nothing after the preface")
    return Check("HTTP/2 over TLS 1.3", FAIL, f"{ours.version}, ALPN h2, but {seen}")


async def _open_sessions(config: TargetConfig, party: str, models: Sequence[str]) -> list[tuple[str, str]]:
    """(model, problem or "") for a POST sessions per model, as the harness's router (§6.1)."""
    from sdcp_conformance.models.registry import mock_model
    from sdcp_conformance.protocol.messages import SessionState
    from sdcp_conformance.protocol.problems import SDCP_MEDIA_TYPE
    from sdcp_conformance.transport.client import Timeouts, sdcp_client
    from sdcp_conformance.transport.pki import load_pki

    pki = load_pki(config.pki)
    outcomes = []
    timeouts = Timeouts(connect=TIMEOUT_S, read=TIMEOUT_S, total=2 * TIMEOUT_S)
    async with sdcp_client(config.http, config.base_uri, pki.cert(party), pki.key(party), config.ca,
                           timeouts=timeouts, max_attempts=1) as client:
        for model in models:
            info = mock_model(model)
            session = secrets.token_bytes(16)
            opening = {"session": session, "epoch": 1, "prompt": [1, 2, 3],
                       "commit_log": f"{config.cache or config.base_uri}preflight/{session.hex()}/log",
                       "contract": {"target": info.model_sha256, "tokenizer": info.tokenizer_sha256, "rule": 1,
                                    "m_max": 4, "max_new": 4, "stop": [], "low_rounds": 4, "fallback": [5]}}
            try:
                answer = await client.send_message("POST", "sessions", opening, retry=False)
            except Exception as exc:  # a transport failure is this check's finding, said in its line
                outcomes.append((model, f"{type(exc).__name__}: {exc}"))
                continue
            if answer.status in (200, 201):
                if answer.media_type != SDCP_MEDIA_TYPE:
                    outcomes.append((model, f"{answer.status} labelled {answer.content_type!r}, not "
                                            f"{SDCP_MEDIA_TYPE} (§5.1)"))
                    continue
                try:
                    SessionState.from_cbor(answer.body)
                except Exception as exc:  # a malformed session-state is the IUT's, reported in the line
                    outcomes.append((model, f"{answer.status} with a body that is no session-state ({exc})"))
                    continue
                outcomes.append((model, ""))
            else:
                outcomes.append((model, f"POST sessions answered {answer.status} "
                                        f"{answer.body[:160].decode('utf-8', 'replace')}"))
    return outcomes


def _models(config: TargetConfig, ready: bool, party: str) -> Check:
    from sdcp_conformance.harness.suites import role_suite

    serves = role_suite(config.role).serves
    if serves == "none":
        return Check("models", OK, "a router serves no model")
    if serves == "draft":
        return Check("models", SKIP, f"a drafter shows its model ({', '.join(config.models)}) only when assigned a "
                     "session; the sanity case checks it")
    if not ready:
        return Check("models", SKIP, "needs a working HTTP/2 connection")
    try:
        outcomes = event_loops.run(_open_sessions(config, party, config.models))
    except Exception as exc:  # reported in the line, like every other check's failure
        return Check("models", FAIL, f"could not open sessions: {type(exc).__name__}: {exc}")
    bad = [f"{model}: {problem}" for model, problem in outcomes if problem]
    if bad:
        return Check("models", FAIL, "; ".join(bad) + " (does it serve these mock models?)")
    return Check("models", OK, f"opened a session for {', '.join(config.models)}")


def _load_control(config: TargetConfig, pki: Any) -> Check | None:
    """When the target names a load hook or command: does it answer? It is asked to give the load back (``null``
    / ``none``), which changes nothing a certification relies on."""
    from sdcp_conformance.harness import load_control

    if not (config.load_hook or config.load_command):
        return None
    try:
        if config.load_hook:
            event_loops.run(load_control.put_load(config.load_hook, None, cert=pki.cert("router"),
                                                  key=pki.key("router"), ca=config.ca, http=config.http))
            return Check("load control", OK, f"{config.load_hook} took PUT {{\"load\": null}}")
        event_loops.run(load_control.run_load_command(config.load_command, None))
    except load_control.LoadControlError as exc:
        return Check("load control", FAIL, f"{exc} (VER-6.5-ESC-009 would be INCOMPLETE)")
    return Check("load control", OK, f"`{' '.join(load_control.command_words(config.load_command, None))}` exited 0")


def iut_fingerprint(config: TargetConfig, *, timeout_s: float = TIMEOUT_S) -> str | None:
    """The fingerprint of the certificate the IUT presents (one handshake), or None if it presents none."""
    from sdcp_conformance.transport.certificates import fingerprint_der
    from sdcp_conformance.transport.pki import load_pki

    party = client_party(config)
    pki = load_pki(config.pki)
    seen = _handshake(config, pki.cert(party), pki.key(party), timeout_s)
    return fingerprint_der(seen.der) if seen.der else None


def preflight(config: TargetConfig, *, timeout_s: float = TIMEOUT_S) -> Preflight:
    """Run every check against ``config``'s IUT."""
    from sdcp_conformance.transport.certificates import fingerprint_der
    from sdcp_conformance.transport.pki import load_pki

    if config.http == "3":
        return _preflight_h3(config, timeout_s)
    host, port = _address(config.base_uri)
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        reachable = Check("reachable", FAIL, f"nothing accepts TCP at {host}:{port} ({exc}); is the IUT running?")
        skipped = [Check(name, SKIP, "not reachable") for name in
                   ("certificate", "client certificate", "HTTP/2 over TLS 1.3", "models")]
        return Preflight((reachable, *skipped), None)
    checks = [Check("reachable", OK, f"{host}:{port} accepts TCP")]
    party = client_party(config)
    pki = load_pki(config.pki)
    ours = _handshake(config, pki.cert(party), pki.key(party), timeout_s)
    anonymous = _handshake(config, None, None, timeout_s)
    checks += [_certificate(config, ours), _client_certificate(ours, anonymous, party), _http2(ours)]
    if config.http == "both":  # D-JUDGE-HTTP-1: each listener is checked; the HTTP/3 one beside the HTTP/2 one
        from sdcp_conformance.harness.check_h3 import quic_checks

        checks += quic_checks(config, pki.cert(party), pki.key(party), party, timeout_s)
    ready = all(check.outcome == OK for check in checks)
    checks.append(_models(config, ready, party))
    load = _load_control(config, pki)
    if load is not None:
        checks.append(load)
    return Preflight(tuple(checks), fingerprint_der(ours.der) if ours.der else None)


def _preflight_h3(config: TargetConfig, timeout_s: float) -> Preflight:
    """An HTTP/3-only IUT: the QUIC lines (:mod:`.check_h3`) instead of the TCP ones, then the models."""
    from sdcp_conformance.harness.check_h3 import quic_checks
    from sdcp_conformance.transport.pki import load_pki

    party = client_party(config)
    pki = load_pki(config.pki)
    checks = quic_checks(config, pki.cert(party), pki.key(party), party, timeout_s)
    ready = all(check.outcome == OK for check in checks)
    checks.append(_models(config, ready, party))
    load = _load_control(config, pki)
    if load is not None:
        checks.append(load)
    return Preflight(tuple(checks), None)


__all__ = ["FAIL", "NON_STRICT", "OK", "SKIP", "TIMEOUT_S", "Check", "Preflight", "client_party", "iut_fingerprint",
           "preflight"]
