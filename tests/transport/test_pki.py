"""The test PKI: identities, key usages, chains and the negative material (P1-ID-1)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from sdcp_conformance.cli.pki import pki as pki_group
from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.transport.pki import Pki, init_pki, issue_party, load_pki

from .conftest import PARTIES


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _uris(cert: x509.Certificate) -> list[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return san.get_values_for_type(x509.UniformResourceIdentifier)


def _client_verify(pki: Pki, leaf: Path, ca: Path | None = None) -> None:
    """Verify ``leaf`` as a TLS client certificate with cryptography's own path builder."""
    store = Store([_cert(ca or pki.ca_cert)])
    verifier = PolicyBuilder().store(store).build_client_verifier()
    verifier.verify(_cert(leaf), [])


def _server_verify(pki: Pki, leaf: Path, name: x509.verification.Subject) -> None:
    verifier = PolicyBuilder().store(Store([_cert(pki.ca_cert)])).build_server_verifier(name)
    verifier.verify(_cert(leaf), [])


@pytest.mark.parametrize("name", sorted(PARTIES))
def test_party_certificate_names_its_base_uri_and_serves_both_ends(pki: Pki, name: str) -> None:
    cert = _cert(pki.cert(name))
    assert _uris(cert) == [PARTIES[name]]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(eku) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    _client_verify(pki, pki.cert(name))
    _server_verify(pki, pki.cert(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    _server_verify(pki, pki.cert(name), x509.DNSName("localhost"))


def test_private_keys_are_owner_only(pki: Pki) -> None:
    for path in [pki.ca_key, *(pki.key(n) for n in PARTIES), pki.expired.key]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_expired_certificate_is_expired_but_otherwise_valid(pki: Pki) -> None:
    cert = _cert(pki.expired.cert)
    assert cert.not_valid_after_utc < dt.datetime.now(dt.UTC)
    assert _uris(cert) == [PARTIES["drafter-1"]]
    with pytest.raises(VerificationError):
        _client_verify(pki, pki.expired.cert)


def test_wrong_ca_certificate_fails_our_ca_and_passes_its_own(pki: Pki) -> None:
    assert _uris(_cert(pki.wrong_ca.cert)) == [PARTIES["drafter-1"]]
    with pytest.raises(VerificationError):
        _client_verify(pki, pki.wrong_ca.cert)
    _client_verify(pki, pki.wrong_ca.cert, ca=pki.wrong_ca_cert)


def test_no_uri_san_certificate_is_valid_without_identity(pki: Pki) -> None:
    _client_verify(pki, pki.no_uri_san.cert)
    assert _uris(_cert(pki.no_uri_san.cert)) == []


def test_other_party_certificate_is_valid_and_names_someone_else(pki: Pki) -> None:
    _client_verify(pki, pki.other_party.cert)
    uris = _uris(_cert(pki.other_party.cert))
    assert uris == [pki.other_party_uri]
    assert pki.other_party_uri in PARTIES.values()
    assert pki.other_party_uri != PARTIES["drafter-1"]
    # An impostor has its own key, not a copy of the real party's.
    assert pki.other_party.key.read_bytes() not in {pki.key(n).read_bytes() for n in PARTIES}


def test_single_party_pki_uses_the_impostor_uri(tmp_path: Path) -> None:
    made = init_pki(tmp_path, {"solo": "https://127.0.0.1:1/solo/"})
    assert _uris(_cert(made.other_party.cert)) == ["https://127.0.0.1/impostor/"]


def test_load_pki_round_trips(pki: Pki) -> None:
    assert load_pki(pki.directory) == pki


def test_issue_party_reissues_for_a_new_base_uri(tmp_path: Path) -> None:
    made = init_pki(tmp_path, {"a": "https://127.0.0.1:1/a/", "b": "https://127.0.0.1:2/b/"})
    new = issue_party(made, "a", "https://127.0.0.1:54321/a/")
    assert _uris(_cert(new.cert("a"))) == ["https://127.0.0.1:54321/a/"]
    _client_verify(new, new.cert("a"))
    assert load_pki(tmp_path).base_uris["a"] == "https://127.0.0.1:54321/a/"
    assert "https://127.0.0.1:54321/a/" in (tmp_path / "PARTIES.txt").read_text()


def test_parties_text_maps_every_party_to_its_files(pki: Pki) -> None:
    text = (pki.directory / "PARTIES.txt").read_text()
    for name, uri in PARTIES.items():
        assert f"{name}: identity {uri}" in text
        assert f"parties/{name}.pem" in text and f"parties/{name}.key" in text
    for stem in ("expired", "wrong-ca", "no-uri-san", "other-party"):
        assert f"negative/{stem}.pem" in text


@pytest.mark.parametrize(
    "parties",
    [{}, {"x": "http://127.0.0.1/x/"}, {"x": "https://127.0.0.1/x"}],
    ids=["empty", "not-https", "no-trailing-slash"],
)
def test_init_pki_refuses_unusable_parties(tmp_path: Path, parties: dict[str, str]) -> None:
    with pytest.raises(InvalidArgument):
        init_pki(tmp_path, parties)


def test_load_pki_of_an_empty_directory_says_so(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="pki init"):
        load_pki(tmp_path)


def test_cli_init_writes_requested_parties(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        pki_group,
        ["init", str(tmp_path / "out"), "--custom-parties", "--party", "v=https://127.0.0.1:7/v/", "--party",
         "d=https://127.0.0.1:8/d/"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "v: identity https://127.0.0.1:7/v/" in result.output
    assert _uris(_cert(tmp_path / "out" / "parties" / "d.pem")) == ["https://127.0.0.1:8/d/"]


def test_cli_init_rejects_a_malformed_party(tmp_path: Path) -> None:
    result = CliRunner().invoke(pki_group, ["init", str(tmp_path), "--party", "nouri"])
    assert result.exit_code != 0
    assert "NAME=BASE_URI" in result.output
