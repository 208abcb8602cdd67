"""A test PKI: one CA, a certificate per SDCP party, and certificates for negative tests.

P1-ID-1: "Every party is identified by the URI SAN of its TLS certificate,
which equals its base URI". trustme cannot put a URI in the SAN, so the
certificates are minted with ``cryptography``. Every party certificate is
usable as TLS server *and* client certificate (EKU serverAuth + clientAuth)
and also names ``localhost``/``127.0.0.1``/``::1`` so loopback servers verify.

Files on disk (all PEM; keys unencrypted, mode 0600)::

    ca.pem, ca.key                     the test CA (the key allows issuing later)
    parties/<name>.pem, <name>.key     one per party
    negative/expired.*, wrong-ca.*,    material for refusal tests
    negative/wrong-ca-ca.pem,
    negative/no-uri-san.*, other-party.*
    pki.json                           manifest read by :func:`load_pki`
    PARTIES.txt                        which file goes to which party
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from sdcp_conformance.errors import InvalidArgument

# D-PKI-1: a party's URI SAN is exactly the base URI it is given, port
# included (P1-ID-1 names the port as part of the identity). Tests bind free
# ports, so a certificate for a base URI known only after binding is minted
# with :func:`issue_party`; a client identity never has to match a listening
# port, and servers are verified by their IP/DNS SANs, so most tests keep the
# certificates from :func:`init_pki`.
LOOPBACK_DNS_NAMES = ("localhost",)
LOOPBACK_IPS = ("127.0.0.1", "::1")

VALIDITY = dt.timedelta(days=825)
CLOCK_SKEW = dt.timedelta(hours=1)
"""Certificates start an hour in the past so a slightly slow peer clock accepts them."""

IMPOSTOR_URI = "https://127.0.0.1/impostor/"
"""URI SAN of ``other_party`` when the PKI has a single party (D-PKI-2)."""

MANIFEST = "pki.json"


@dataclass(frozen=True)
class CertKey:
    """A certificate file and its private-key file."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Paths of a PKI written by :func:`init_pki`.

    D-PKI-2: the negative material impersonates ``subject`` (the first party
    unless told otherwise): ``expired`` and ``wrong_ca`` carry its URI SAN,
    ``no_uri_san`` carries none, and ``other_party`` is a CA-valid certificate
    whose URI SAN is another party's base URI (the first other party, or
    :data:`IMPOSTOR_URI`) with a key of its own, so a server expecting ``subject`` must refuse it.
    """

    directory: Path
    ca_cert: Path
    ca_key: Path
    parties: dict[str, CertKey]
    base_uris: dict[str, str]
    subject: str
    expired: CertKey
    wrong_ca: CertKey
    wrong_ca_cert: Path
    no_uri_san: CertKey
    other_party: CertKey
    other_party_uri: str

    def cert(self, name: str) -> Path:
        return self._party(name).cert

    def key(self, name: str) -> Path:
        return self._party(name).key

    def _party(self, name: str) -> CertKey:
        try:
            return self.parties[name]
        except KeyError:
            raise InvalidArgument(f"no party {name!r} in the PKI at {self.directory}") from None


def init_pki(directory: Path, parties: Mapping[str, str], *, subject: str | None = None) -> Pki:
    """Mint a CA, one certificate per party and the negative material into ``directory``."""
    if not parties:
        raise InvalidArgument("a PKI needs at least one party")
    for uri in parties.values():
        _check_base_uri(uri)
    subject = subject or next(iter(parties))
    if subject not in parties:
        raise InvalidArgument(f"subject {subject!r} is not a party")
    directory.mkdir(parents=True, exist_ok=True)
    now = _now()
    ca_key, ca_cert = _make_ca("SDCP conformance test CA", now)
    _write_pair(directory, "ca", ca_cert, ca_key)
    for name, uri in parties.items():
        _issue_to(directory / "parties", name, ca_cert, ca_key, name, uri, now)
    _write_negative(directory, parties, subject, ca_cert, ca_key, now)
    pki = _pki_from_manifest(directory, _manifest(parties, subject))
    (directory / MANIFEST).write_text(json.dumps(_manifest(parties, subject), indent=2) + "\n")
    (directory / "PARTIES.txt").write_text(parties_text(pki))
    return pki


def issue_party(pki: Pki, name: str, base_uri: str) -> Pki:
    """Mint (or re-mint) the certificate of party ``name`` for ``base_uri``; return the new Pki.

    Use it once a server has bound its port and the party's base URI is known.
    """
    _check_base_uri(base_uri)
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    ca_key = _load_key(pki.ca_key)
    _issue_to(pki.directory / "parties", name, ca_cert, ca_key, name, base_uri, _now())
    parties = {**pki.base_uris, name: base_uri}
    manifest = _manifest(parties, pki.subject)
    (pki.directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    new = _pki_from_manifest(pki.directory, manifest)
    (pki.directory / "PARTIES.txt").write_text(parties_text(new))
    return new


def load_pki(directory: Path) -> Pki:
    """Read a PKI that :func:`init_pki` wrote."""
    path = directory / MANIFEST
    if not path.is_file():
        raise InvalidArgument(f"{directory} holds no {MANIFEST}; run `pki init` first")
    return _pki_from_manifest(directory, json.loads(path.read_text()))


def uri_sans(cert_pem: bytes) -> list[str]:
    """The URI SANs of a PEM certificate (for tests and diagnostics)."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return list(san.value.get_values_for_type(x509.UniformResourceIdentifier))


def parties_text(pki: Pki) -> str:
    """The human-readable PARTIES.txt: which files go to which party."""
    lines = [
        "SDCP conformance test PKI",
        "",
        "Every party trusts ca.pem and presents its own certificate as TLS server",
        "AND client certificate (P1-ID-1: its URI SAN is its base URI).",
        "",
    ]
    for name, pair in pki.parties.items():
        lines.append(f"{name}: identity {pki.base_uris[name]}")
        lines.append(f"    certificate {_rel(pki, pair.cert)}, key {_rel(pki, pair.key)}")
    lines += [
        "",
        f"Negative-test material (impersonating {pki.subject!r}); a conforming peer refuses each:",
        f"  {_rel(pki, pki.expired.cert)}: expired, else valid",
        f"  {_rel(pki, pki.wrong_ca.cert)}: signed by another CA ({_rel(pki, pki.wrong_ca_cert)})",
        f"  {_rel(pki, pki.no_uri_san.cert)}: valid, but no URI SAN",
        f"  {_rel(pki, pki.other_party.cert)}: valid, URI SAN of another party ({pki.other_party_uri})",
        "",
        "ca.key signs further certificates (`issue_party`); never give it to a party.",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- internals


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _check_base_uri(uri: str) -> None:
    if not uri.startswith("https://") or not uri.endswith("/"):
        raise InvalidArgument(f"base URI {uri!r} must be https:// and end with '/' (P1-ID-1)")


def _manifest(parties: Mapping[str, str], subject: str) -> dict[str, object]:
    other = next((uri for name, uri in parties.items() if name != subject), IMPOSTOR_URI)
    return {"parties": dict(parties), "subject": subject, "other_party_uri": other}


def _pki_from_manifest(directory: Path, manifest: Mapping[str, object]) -> Pki:
    parties = dict(manifest["parties"])  # type: ignore[call-overload]
    neg = directory / "negative"
    return Pki(
        directory=directory,
        ca_cert=directory / "ca.pem",
        ca_key=directory / "ca.key",
        parties={n: _pair(directory / "parties", n) for n in parties},
        base_uris={str(k): str(v) for k, v in parties.items()},
        subject=str(manifest["subject"]),
        expired=_pair(neg, "expired"),
        wrong_ca=_pair(neg, "wrong-ca"),
        wrong_ca_cert=neg / "wrong-ca-ca.pem",
        no_uri_san=_pair(neg, "no-uri-san"),
        other_party=_pair(neg, "other-party"),
        other_party_uri=str(manifest["other_party_uri"]),
    )


def _pair(folder: Path, stem: str) -> CertKey:
    return CertKey(folder / f"{stem}.pem", folder / f"{stem}.key")


def _rel(pki: Pki, path: Path) -> str:
    return path.relative_to(pki.directory).as_posix()


def _write_negative(
    directory: Path,
    parties: Mapping[str, str],
    subject: str,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
) -> None:
    neg = directory / "negative"
    uri = parties[subject]
    expired_at = now - dt.timedelta(days=2)
    _issue_to(neg, "expired", ca_cert, ca_key, subject, uri, expired_at, dt.timedelta(days=1))
    other_ca_key, other_ca = _make_ca("SDCP conformance WRONG CA", now)
    (neg / "wrong-ca-ca.pem").write_bytes(other_ca.public_bytes(serialization.Encoding.PEM))
    _issue_to(neg, "wrong-ca", other_ca, other_ca_key, subject, uri, now)
    _issue_to(neg, "no-uri-san", ca_cert, ca_key, subject, None, now)
    other_uri = str(_manifest(parties, subject)["other_party_uri"])
    _issue_to(neg, "other-party", ca_cert, ca_key, "impostor", other_uri, now)


def _make_ca(common_name: str, now: dt.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    usage = x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
        encipher_only=False, decipher_only=False,
    )  # fmt: skip
    cert = (
        _builder(name, name, key.public_key(), now - CLOCK_SKEW, now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _issue_to(
    folder: Path,
    stem: str,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    common_name: str,
    uri: str | None,
    start: dt.datetime,
    validity: dt.timedelta = VALIDITY,
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    usage = x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
        encipher_only=False, decipher_only=False,
    )  # fmt: skip
    eku = x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        _builder(subject, ca_cert.subject, key.public_key(), start - CLOCK_SKEW, start + validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(usage, critical=True)
        .add_extension(eku, critical=False)
        .add_extension(_san(uri), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_pair(folder, stem, cert, key)


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    not_before: dt.datetime,
    not_after: dt.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
    )


def _san(uri: str | None) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in LOOPBACK_DNS_NAMES]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in LOOPBACK_IPS]
    if uri is not None:
        names.insert(0, x509.UniformResourceIdentifier(uri))
    return x509.SubjectAlternativeName(names)


def _write_pair(folder: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = folder / f"{stem}.key"
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Create with 0600 from the start: a private key is never world-readable, even briefly.
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key_bytes)


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise InvalidArgument(f"{path} is not an EC private key")
    return key


__all__ = ["CertKey", "Pki", "init_pki", "issue_party", "load_pki", "parties_text", "uri_sans"]
