"""Mutual certificate authentication for QUIC (HTTP/3), which aioquic does not offer a server (see H3_NOTES.md).

§5.1: "HTTP/2 [RFC9113] or HTTP/3 [RFC9114] over TLS 1.3 [RFC8446] with mutual
certificate authentication is REQUIRED."

aioquic (1.7.2, pinned) can *send* a client certificate, and its TLS engine
can *request* one, but only behind a flag it marks "for test purposes only",
and a server never verifies what the client presented (only its
CertificateVerify signature), accepts an empty Certificate, and does not
publish the peer's certificate (aiortc/aioquic#377, #548). This module is the
one place the project reaches into aioquic for that, and it does so in two
narrow, named ways:

* :class:`MutualTlsQuicConnection` turns the flag on for every server
  connection it opens (a subclass of aioquic's public ``QuicConnection``), so
  the server sends CertificateRequest (RFC 8446 §4.3.2);
* :func:`peer_chain` reads the certificate chain the peer presented.

Both check :data:`PINNED_AIOQUIC` and fail loudly (:class:`UnsupportedAioquic`)
rather than silently serve without client authentication; a newer aioquic is
to be reviewed against this module before the pin moves. The decision itself,
:func:`verify_client_chain`, is ours: the chain must lead to the configured CA,
be valid now and be meant for client authentication (``cryptography``'s RFC
5280 client verifier), and the refusal names the TLS alert RFC 8446 §6.2 gives
for it, sent as a QUIC CRYPTO_ERROR (RFC 9001 §4.8: 0x100 + alert).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import aioquic
from aioquic.quic.connection import QuicConnection
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from sdcp_conformance.errors import SdcpConformanceError

PINNED_AIOQUIC = "1.7.2"
"""The aioquic whose internals :class:`MutualTlsQuicConnection` and :func:`peer_chain` were reviewed against."""

CRYPTO_ERROR = 0x100
"""RFC 9001 §4.8: a TLS alert ends a QUIC connection with error code 0x100 + the alert's value."""


class Alert:
    """The RFC 8446 §6 alerts a refused client is told (values, as the wire carries them)."""

    BAD_CERTIFICATE = 42
    CERTIFICATE_EXPIRED = 45
    UNKNOWN_CA = 48
    CERTIFICATE_REQUIRED = 116
    NO_APPLICATION_PROTOCOL = 120


ALERT_NAMES = {
    Alert.BAD_CERTIFICATE: "bad_certificate",
    Alert.CERTIFICATE_EXPIRED: "certificate_expired",
    Alert.UNKNOWN_CA: "unknown_ca",
    Alert.CERTIFICATE_REQUIRED: "certificate_required",
    Alert.NO_APPLICATION_PROTOCOL: "no_application_protocol",
}


def alert_of(error_code: int) -> str | None:
    """The TLS alert a QUIC connection error code carries (RFC 9001 §4.8), by name; ``None`` if it carries none."""
    if not CRYPTO_ERROR <= error_code <= CRYPTO_ERROR + 0xFF:
        return None
    alert = error_code - CRYPTO_ERROR
    return ALERT_NAMES.get(alert, f"alert {alert}")


class UnsupportedAioquic(SdcpConformanceError):
    """The installed aioquic is not the one this module was reviewed against (client authentication unsafe)."""


@dataclass(frozen=True)
class Refusal:
    """Why a client certificate was refused: the alert to send and the reason in words."""

    alert: int
    detail: str

    @property
    def error_code(self) -> int:
        return CRYPTO_ERROR + self.alert


def check_aioquic() -> None:
    """Raise :class:`UnsupportedAioquic` unless the installed aioquic is :data:`PINNED_AIOQUIC`."""
    if aioquic.__version__ != PINNED_AIOQUIC:
        raise UnsupportedAioquic(f"aioquic {aioquic.__version__} is installed; the HTTP/3 client authentication was "
                                 f"reviewed against {PINNED_AIOQUIC} only (sdcp_conformance/transport/H3_NOTES.md)")


class MutualTlsQuicConnection(QuicConnection):
    """A server-side aioquic connection whose TLS handshake sends CertificateRequest (RFC 8446 §4.3.2).

    aioquic builds its TLS context when the client's first Initial arrives (``_initialize``); the request is
    switched on right there, before the ClientHello is processed. Whether what comes back is acceptable is
    :func:`verify_client_chain`'s decision, made when the handshake completes.
    """

    def _initialize(self, peer_cid: bytes) -> None:
        super()._initialize(peer_cid)
        if not hasattr(self.tls, "_request_client_certificate"):
            raise UnsupportedAioquic("aioquic's TLS context has no _request_client_certificate (H3_NOTES.md)")
        self.tls._request_client_certificate = True


APPLICATION_ACK_DELAY_S = 0.020
"""How long an ack of a 1-RTT packet may wait for data to ride with, once the handshake is done: under the 25 ms
max_ack_delay aioquic advertises (RFC 9000 §13.2.1, §18.2), where aioquic's own 1 ms sends an ACK-only datagram
for nearly every packet of a request/response exchange."""


def delay_application_acks(connection: QuicConnection) -> None:
    """At handshake completion: acks of application data wait up to :data:`APPLICATION_ACK_DELAY_S` (aioquic 1.7.2
    keeps the delay private, ``_ack_delay``; Initial and Handshake packets were acked at once before this)."""
    if not hasattr(connection, "_ack_delay"):
        raise UnsupportedAioquic("aioquic's QuicConnection has no _ack_delay (H3_NOTES.md)")
    connection._ack_delay = APPLICATION_ACK_DELAY_S


def peer_chain(connection: QuicConnection) -> list[x509.Certificate]:
    """The certificates the peer presented, leaf first (empty if none): aioquic 1.7.2 keeps them private."""
    tls = getattr(connection, "tls", None)
    if tls is None:
        return []
    leaf = getattr(tls, "_peer_certificate", None)
    chain = getattr(tls, "_peer_certificate_chain", None)
    if not hasattr(tls, "_peer_certificate") or chain is None:
        raise UnsupportedAioquic("aioquic's TLS context keeps no _peer_certificate (H3_NOTES.md)")
    return [] if leaf is None else [leaf, *chain]


def load_ca(path: Path) -> list[x509.Certificate]:
    """The trust anchors in a PEM file (the PKI's ``ca.pem``)."""
    return x509.load_pem_x509_certificates(path.read_bytes())


def verify_client_chain(chain: list[x509.Certificate], anchors: list[x509.Certificate],
                        now: dt.datetime | None = None) -> Refusal | None:
    """``None`` if ``chain`` (leaf first) authenticates a client against ``anchors``; else why not.

    §5.1 requires mutual certificate authentication, so no certificate at all is refused (certificate_required,
    RFC 8446 §4.4.2.4: "If the client does not send any certificates ... the server MAY ... abort the handshake
    with a 'certificate_required' alert"); an expired or not-yet-valid leaf gets certificate_expired, a chain to
    no trusted CA unknown_ca, anything else the verifier refuses (no clientAuth EKU, a broken chain)
    bad_certificate.
    """
    if not chain:
        return Refusal(Alert.CERTIFICATE_REQUIRED, "the client presented no certificate (§5.1: mutual certificate "
                                                   "authentication is REQUIRED)")
    now = now or dt.datetime.now(dt.UTC)
    leaf, intermediates = chain[0], chain[1:]
    if not leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc:
        return Refusal(Alert.CERTIFICATE_EXPIRED, f"the client's certificate is valid from "
                       f"{leaf.not_valid_before_utc:%Y-%m-%d %H:%M} to {leaf.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")
    issuers = {anchor.subject for anchor in anchors} | {cert.subject for cert in intermediates}
    if leaf.issuer not in issuers:
        return Refusal(Alert.UNKNOWN_CA, f"the client's certificate is issued by {leaf.issuer.rfc4514_string()}, "
                       "not by the configured CA")
    verifier = PolicyBuilder().store(Store(anchors)).time(now).build_client_verifier()
    try:
        verifier.verify(leaf, intermediates)
    except VerificationError as error:
        alert = Alert.UNKNOWN_CA if "issuer" in str(error).lower() else Alert.BAD_CERTIFICATE
        return Refusal(alert, f"the client's certificate failed verification: {error}")
    return None


def verify_server_chain(chain: list[x509.Certificate], anchors: list[x509.Certificate], host: str,
                        now: dt.datetime | None = None) -> Refusal | None:
    """``None`` if ``chain`` (leaf first) authenticates the server at ``host`` (an IP address or DNS name) against
    ``anchors``; else why not.

    Ours, not aioquic's: aioquic checks the name with service_identity, which cannot parse a URI SAN that carries
    a port (``https://127.0.0.1:9001/verifier/`` raises inside it), and every SDCP party certificate carries one
    (P1-ID-1: the base URI, port included). ``cryptography``'s RFC 5280 server verifier reads it.
    """
    if not chain:
        return Refusal(Alert.CERTIFICATE_REQUIRED, "the server presented no certificate")
    now = now or dt.datetime.now(dt.UTC)
    leaf, intermediates = chain[0], chain[1:]
    if not leaf.not_valid_before_utc <= now <= leaf.not_valid_after_utc:
        return Refusal(Alert.CERTIFICATE_EXPIRED, "the server's certificate is not valid now")
    try:
        subject: x509.DNSName | x509.IPAddress = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        subject = x509.DNSName(host)
    verifier = PolicyBuilder().store(Store(anchors)).time(now).build_server_verifier(subject)
    try:
        verifier.verify(leaf, intermediates)
    except VerificationError as error:
        return Refusal(Alert.BAD_CERTIFICATE, f"the server's certificate failed verification for {host}: {error}")
    return None


def uri_sans(certificate: x509.Certificate) -> tuple[str, ...]:
    """Every URI SAN of a certificate, in order (P1-ID-1 identifies a party by its one URI SAN)."""
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    return tuple(san.get_values_for_type(x509.UniformResourceIdentifier))


def identity_of(chain: list[x509.Certificate]) -> str | None:
    """The party a verified chain names (P1-ID-1), as :func:`~.tls.peer_uri_san` gives it for HTTP/2: the leaf's
    URI SAN, ``None`` for none or several (D-TLS-1)."""
    uris = uri_sans(chain[0]) if chain else ()
    return uris[0] if len(uris) == 1 else None


__all__ = [
    "ALERT_NAMES",
    "APPLICATION_ACK_DELAY_S",
    "CRYPTO_ERROR",
    "PINNED_AIOQUIC",
    "Alert",
    "MutualTlsQuicConnection",
    "Refusal",
    "UnsupportedAioquic",
    "alert_of",
    "check_aioquic",
    "delay_application_acks",
    "identity_of",
    "load_ca",
    "peer_chain",
    "uri_sans",
    "verify_client_chain",
    "verify_server_chain",
]
