"""The signed bundle: `bundle verify` accepts a fresh one and rejects any member changed by one byte.

The attestation is also checked without our code: the DSSE signature over
the pre-authentication encoding computed here by hand, with the public key
`pki init` minted, and the statement parsed and validated by the in-toto
attestation library, its subjects' digests recomputed with hashlib.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from sdcp_conformance.report.bundle import ATTESTATION_NAME, PUBLIC_KEY_NAME, rewrite_member
from tests.report.conftest import Run, cli

EXPECTED_MEMBERS = {"report.json", "evidence.json.gz", "junit.xml", "report.html", "certification.json"}


def _contents(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def test_fresh_bundle_verifies_and_says_what_was_certified(full_run: Run) -> None:
    assert full_run.bundle is not None
    done = cli("bundle", "verify", str(full_run.bundle), "--key", str(full_run.key))
    assert done.returncode == 0, done.stderr
    document = json.loads((full_run.folder / "report.json").read_text(encoding="utf-8"))
    assert f"certified: the verifier at {document['run']['iut']}" in done.stdout
    assert f"IUT certificate: {document['run']['iut_certificate']}" in done.stdout
    assert "status: PASSED" in done.stdout and f"seed {document['run']['seed']}" in done.stdout
    assert document["tool"]["source_sha256"] in done.stdout
    assert set(_contents(full_run.bundle)) == EXPECTED_MEMBERS | {ATTESTATION_NAME, PUBLIC_KEY_NAME}
    assert _contents(full_run.bundle)["report.json"] == (full_run.folder / "report.json").read_bytes()


def test_the_attestation_verifies_with_the_ecosystem_libraries(full_run: Run) -> None:
    from google.protobuf import json_format
    from in_toto_attestation.v1.statement import Statement
    from in_toto_attestation.v1.statement_pb2 import Statement as StatementProto

    assert full_run.bundle is not None and full_run.key is not None
    contents = _contents(full_run.bundle)
    envelope = json.loads(contents[ATTESTATION_NAME])
    payload = base64.b64decode(envelope["payload"])
    kind = envelope["payloadType"].encode()
    pae = b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)  # DSSE v1 pre-authentication encoding
    public = serialization.load_pem_public_key(full_run.key.read_bytes())
    assert isinstance(public, Ed25519PublicKey)
    [signature] = envelope["signatures"]
    public.verify(base64.b64decode(signature["sig"]), pae)  # raises if the signature is wrong
    statement = json.loads(payload)
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    Statement.copy_from_pb(json_format.ParseDict(statement, StatementProto())).validate()
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects == {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()
                        if name in EXPECTED_MEMBERS}
    assert statement["predicate"]["status"] == "PASSED" and statement["predicate"]["role"] == "verifier"


@pytest.mark.parametrize("member", sorted(EXPECTED_MEMBERS))
def test_a_member_changed_by_one_byte_is_rejected(full_run: Run, tmp_path: Path, member: str) -> None:
    assert full_run.bundle is not None
    tampered = tmp_path / "tampered.zip"
    shutil.copy(full_run.bundle, tampered)
    data = bytearray(_contents(tampered)[member])
    data[len(data) // 2] ^= 0x01
    rewrite_member(tampered, member, bytes(data))
    done = cli("bundle", "verify", str(tampered))
    assert done.returncode == 1 and f"{member} was changed" in done.stderr and "Traceback" not in done.stderr


def test_added_removed_or_resigned_members_are_rejected(full_run: Run, tmp_path: Path, keys: Path) -> None:
    assert full_run.bundle is not None
    extra = tmp_path / "extra.zip"
    shutil.copy(full_run.bundle, extra)
    rewrite_member(extra, "notes.txt", b"trust me")
    done = cli("bundle", "verify", str(extra))
    assert done.returncode == 1 and "not attested ['notes.txt']" in done.stderr
    # a forger who re-signs with a key of their own passes only a verifier that does not pin the key
    forged_key = tmp_path / "forger"
    assert cli("pki", "init", str(forged_key)).returncode == 0
    done = cli("bundle", "verify", str(full_run.bundle), "--key", str(forged_key / "attestation.pub"))
    assert done.returncode == 1 and "signature does not verify" in done.stderr
    envelope = json.loads(_contents(full_run.bundle)[ATTESTATION_NAME])
    envelope["signatures"][0]["sig"] = base64.b64encode(b"\0" * 64).decode()
    bad = tmp_path / "badsig.zip"
    shutil.copy(full_run.bundle, bad)
    rewrite_member(bad, ATTESTATION_NAME, json.dumps(envelope).encode())
    assert cli("bundle", "verify", str(bad)).returncode == 1
