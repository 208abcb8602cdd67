"""A signed certification bundle: one zip of a run's files plus an in-toto attestation over every one of them.

The attestation is a DSSE envelope (securesystemslib), Ed25519-signed, whose
payload is an in-toto Statement v1 (``in_toto_attestation``): one subject per
member, named by its path in the zip and its SHA-256, and the certification
summary (:func:`certification_summary`) as the predicate. ``bundle verify``
checks the signature, that the zip holds exactly the subjects, and every
member's digest, then prints what was certified.

Members: ``report.json``, ``evidence.json.gz`` (when the run moved any),
``junit.xml``, ``report.html``, ``certification.json`` (seed, harness version
and source hash, IUT and its certificate fingerprint, status, counts), the
target file as ``target.toml`` when there was one. Beside them, unsigned but
covered by nothing they could change: ``attestation.intoto.json`` (the
envelope) and ``attestation.pub`` (the signer's public key, PEM).

D-RPT-8: the signing key is ``--signing-key FILE`` (an Ed25519 private key,
PEM PKCS#8), else ``attestation.key`` of the target's PKI folder (``pki
init`` mints one), else a one-off key made for this bundle. The public key
travels in the bundle, so verification proves integrity; authenticity needs
the verifier to pin the key it expects (``bundle verify --key PUB``) — the
key ID is printed either way.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.report.rejudge import DECLARATION_NAME, SUMMARY_NAME, Disagreement, Rejudged, rejudge

ATTESTATION_NAME = "attestation.intoto.json"
PUBLIC_KEY_NAME = "attestation.pub"
TARGET_NAME = "target.toml"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:sdcp-conformance:predicate:certification:v1"
KEY_FILE = "attestation.key"
PUB_FILE = "attestation.pub"
RUN_FILES = ("report.json", "evidence.json.gz", "junit.xml", "report.html")
DECLARATION_SIGNATURE_NAME = "declaration.intoto.json"
DECLARATION_KEY_NAME = "declaration.pub"
DECLARATION_PAYLOAD_TYPE = "application/vnd.sdcp-conformance.declaration+toml"
_EPOCH = (1980, 1, 1, 0, 0, 0)


# --------------------------------------------------------------------------- keys


def generate_key(directory: Path) -> tuple[Path, Path]:
    """Mint ``attestation.key`` / ``attestation.pub`` (Ed25519, PEM) into ``directory``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = directory / KEY_FILE
    public = directory / PUB_FILE
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    private.chmod(0o600)
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def _signer(key_path: Path | None) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from securesystemslib.signer import CryptoSigner

    if key_path is None:
        return CryptoSigner.generate_ed25519()
    try:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise InvalidArgument(f"{key_path}: not an unencrypted PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidArgument(f"{key_path}: the attestation key must be Ed25519, not {type(key).__name__}")
    return CryptoSigner(key)


def _public_pem(signer: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(signer.public_key.keyval["public"]))
    pem: bytes = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return pem


def load_public_key(pem: bytes, where: str) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from securesystemslib.signer import SSlibKey

    try:
        key = serialization.load_pem_public_key(pem)
    except ValueError as exc:
        raise InvalidArgument(f"{where}: not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidArgument(f"{where}: the attestation key must be Ed25519")
    return SSlibKey.from_crypto(key)


# --------------------------------------------------------------------------- making


def certification_summary(document: Mapping[str, Any]) -> dict[str, Any]:
    """What was certified: the predicate of the attestation, and ``certification.json``."""
    run = document["run"]
    return {
        "harness": dict(document["tool"]),
        "role": run.get("role"), "iut": run.get("iut"), "iut_certificate": run.get("iut_certificate"),
        "status": run["status"], "strict": run.get("strict", False), "seed": run["seed"],
        "started": run["started"], "duration_s": run["duration_s"], "mutant": run.get("mutant"),
        "selectors": run.get("selectors", []), "excluded": run.get("excluded", []),
        "counts": dict(document["counts"]), "incomplete": run.get("incomplete", []),
        "requirements": (document.get("requirements") or {}).get("name"),
        "declaration": document.get("declaration"), "reproduce": document.get("reproduce"),
    }


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def statement(members: Mapping[str, bytes], predicate: Mapping[str, Any]) -> dict[str, Any]:
    """The in-toto Statement v1 over ``members`` (validated by ``in_toto_attestation``), as JSON data."""
    from google.protobuf import json_format
    from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
    from in_toto_attestation.v1.statement import Statement

    subjects = [ResourceDescriptor(name=name, digest={"sha256": _sha256(data)}).pb
                for name, data in sorted(members.items())]
    made = Statement(subjects, PREDICATE_TYPE, dict(predicate))
    made.validate()
    data: dict[str, Any] = json_format.MessageToDict(made.pb)
    data["predicate"] = dict(predicate)  # protobuf's Struct turns every number into a float; keep the original
    return data


def write_bundle(path: Path, folder: Path, document: Mapping[str, Any], *, target_file: Path | None = None,
                 key: Path | None = None, declaration_file: Path | None = None,
                 vendor_key: Path | None = None) -> str:
    """Write the bundle of the run in ``folder`` to ``path``; returns the signing key's ID. The declaration the
    run followed travels as ``declaration.toml``, signed by ``vendor_key`` when given (its own DSSE envelope and
    public key, beside the harness's signature over everything)."""
    from securesystemslib.dsse import Envelope

    members: dict[str, bytes] = {name: (folder / name).read_bytes() for name in RUN_FILES
                                 if (folder / name).is_file()}
    summary = certification_summary(document)
    members[SUMMARY_NAME] = (json.dumps(summary, indent=2, sort_keys=True) + "\n").encode()
    if target_file is not None:
        members[TARGET_NAME] = target_file.read_bytes()
    if declaration_file is not None:
        members[DECLARATION_NAME] = declaration_file.read_bytes()
        if vendor_key is not None:
            members.update(_vendor_signed(members[DECLARATION_NAME], vendor_key))
    signer = _signer(key)
    envelope = Envelope(json.dumps(statement(members, summary), sort_keys=True).encode(), PAYLOAD_TYPE, {})
    envelope.sign(signer)
    extra = {ATTESTATION_NAME: (json.dumps(envelope.to_dict(), indent=2) + "\n").encode(),
             PUBLIC_KEY_NAME: _public_pem(signer)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted({**members, **extra}.items()):
            archive.writestr(zipfile.ZipInfo(name, date_time=_EPOCH), data, compress_type=zipfile.ZIP_DEFLATED)
    keyid: str = signer.public_key.keyid
    return keyid


def _vendor_signed(declaration: bytes, vendor_key: Path) -> dict[str, bytes]:
    """The vendor's DSSE envelope over the declaration's bytes, and the vendor's public key."""
    from securesystemslib.dsse import Envelope

    signer = _signer(vendor_key)
    envelope = Envelope(declaration, DECLARATION_PAYLOAD_TYPE, {})
    envelope.sign(signer)
    return {DECLARATION_SIGNATURE_NAME: (json.dumps(envelope.to_dict(), indent=2) + "\n").encode(),
            DECLARATION_KEY_NAME: _public_pem(signer)}


# --------------------------------------------------------------------------- verifying


@dataclass(frozen=True)
class Verified:
    keyid: str
    pinned: bool
    """The key was given (``--key``) rather than taken from the bundle."""
    subjects: dict[str, str]
    predicate: dict[str, Any]
    rejudged: Rejudged | None = None
    """Every verdict recomputed from the evidence (:mod:`.rejudge`)."""
    vendor_keyid: str | None = None
    """The key that signed the declaration (None: the declaration is not signed by its vendor, or absent)."""


class BundleRejected(InvalidArgument):
    """The bundle does not verify: one line says why."""


def verify_bundle(path: Path, *, key: Path | None = None) -> Verified:
    """Check the signature, that the members are exactly the subjects, and every digest."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    try:
        with zipfile.ZipFile(path) as archive:
            contents = {info.filename: archive.read(info) for info in archive.infolist() if not info.is_dir()}
    except (OSError, zipfile.BadZipFile) as exc:
        raise BundleRejected(f"{path}: not a readable bundle (zip): {exc}") from exc
    except (zlib.error, EOFError, ValueError) as exc:  # a flipped byte inside a deflated member
        raise BundleRejected(f"{path}: the bundle is corrupt (a member does not inflate: {exc}); fetch it again "
                             "from where it was signed") from exc
    if ATTESTATION_NAME not in contents:
        raise BundleRejected(f"{path}: no {ATTESTATION_NAME}: not a signed bundle")
    if key is not None:
        public = load_public_key(key.read_bytes(), str(key))
    elif PUBLIC_KEY_NAME in contents:
        public = load_public_key(contents[PUBLIC_KEY_NAME], f"{path}:{PUBLIC_KEY_NAME}")
    else:
        raise BundleRejected(f"{path}: no {PUBLIC_KEY_NAME} and no --key to verify the signature with")
    try:
        envelope = Envelope.from_dict(json.loads(contents[ATTESTATION_NAME]))
    except (ValueError, KeyError, TypeError) as exc:
        raise BundleRejected(f"{path}: {ATTESTATION_NAME} is not a DSSE envelope: {exc}") from exc
    if envelope.payload_type != PAYLOAD_TYPE:
        raise BundleRejected(f"{path}: payload type {envelope.payload_type!r}, expected {PAYLOAD_TYPE}")
    try:
        envelope.verify([public], 1)
    except VerificationError as exc:
        raise BundleRejected(f"{path}: the signature does not verify with key {public.keyid[:16]}…: {exc}") from exc
    try:
        payload = json.loads(envelope.payload)
    except ValueError as exc:
        raise BundleRejected(f"{path}: the signed payload is not JSON: {exc}") from exc
    subjects = _checked_statement(payload, path)
    members = {name: data for name, data in contents.items() if name not in (ATTESTATION_NAME, PUBLIC_KEY_NAME)}
    missing, extra = sorted(set(subjects) - set(members)), sorted(set(members) - set(subjects))
    if missing or extra:
        raise BundleRejected(f"{path}: members and attested subjects differ (missing {missing}, not attested "
                             f"{extra})")
    for name, digest in sorted(subjects.items()):
        if _sha256(members[name]) != digest:
            raise BundleRejected(f"{path}: {name} was changed: its SHA-256 is {_sha256(members[name])}, the "
                                 f"attestation says {digest}")
    vendor = _vendor_keyid(members, path)
    try:
        rejudged = rejudge(members)
    except Disagreement as exc:
        raise BundleRejected(f"{path}: REJECTED although every signature verifies: {exc}") from exc
    return Verified(public.keyid, key is not None, subjects, dict(payload["predicate"]), rejudged, vendor)


def _vendor_keyid(members: Mapping[str, bytes], path: Path) -> str | None:
    """The vendor's key ID when its signature over ``declaration.toml`` verifies (None when not signed)."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    if DECLARATION_SIGNATURE_NAME not in members:
        return None
    if DECLARATION_KEY_NAME not in members or DECLARATION_NAME not in members:
        raise BundleRejected(f"{path}: {DECLARATION_SIGNATURE_NAME} without {DECLARATION_NAME} and "
                             f"{DECLARATION_KEY_NAME}")
    public = load_public_key(members[DECLARATION_KEY_NAME], f"{path}:{DECLARATION_KEY_NAME}")
    try:
        envelope = Envelope.from_dict(json.loads(members[DECLARATION_SIGNATURE_NAME]))
        envelope.verify([public], 1)
    except (ValueError, KeyError, TypeError, VerificationError) as exc:
        raise BundleRejected(f"{path}: the vendor's signature over the declaration does not verify: {exc}") from exc
    if envelope.payload != members[DECLARATION_NAME] or envelope.payload_type != DECLARATION_PAYLOAD_TYPE:
        raise BundleRejected(f"{path}: the vendor signed another declaration than {DECLARATION_NAME}")
    keyid: str = public.keyid
    return keyid


def _checked_statement(payload: Any, path: Path) -> dict[str, str]:
    from google.protobuf import json_format
    from in_toto_attestation.v1.statement import Statement
    from in_toto_attestation.v1.statement_pb2 import Statement as StatementProto

    try:
        parsed = Statement.copy_from_pb(json_format.ParseDict(payload, StatementProto()))
        parsed.validate()
    except (ValueError, json_format.ParseError) as exc:
        raise BundleRejected(f"{path}: the payload is not an in-toto Statement v1: {exc}") from exc
    if payload.get("predicateType") != PREDICATE_TYPE:
        raise BundleRejected(f"{path}: predicate type {payload.get('predicateType')!r}, expected {PREDICATE_TYPE}")
    subjects: dict[str, str] = {}
    for subject in payload["subject"]:
        name, digest = subject.get("name"), subject.get("digest", {}).get("sha256")
        if not name or not digest or name in subjects:
            raise BundleRejected(f"{path}: subject {subject!r} lacks a unique name or a sha256 digest")
        subjects[name] = digest
    return subjects


def describe_verified(verified: Verified, path: Path) -> list[str]:
    """What ``bundle verify`` prints about a bundle that verified."""
    p = verified.predicate
    harness = p.get("harness", {})
    counts = ", ".join(f"{verdict} {count}" for verdict, count in sorted(p.get("counts", {}).items()))
    key = "the key given" if verified.pinned else "the bundle's own key (pin it with --key)"
    return [
        f"{path}: signature and all {len(verified.subjects)} member digests verify "
        f"(Ed25519 key {verified.keyid}, {key})",
        f"certified: the {p.get('role')} at {p.get('iut')}" + (f" (planted bug {p['mutant']})" if p.get("mutant")
                                                               else ""),
        f"IUT certificate: {p.get('iut_certificate') or 'not recorded'}",
        f"status: {p.get('status')}" + (" under --strict" if p.get("strict") else "") + f"; {counts}",
        f"seed {p.get('seed')}, started {p.get('started')}, {p.get('duration_s')} s",
        f"harness: {harness.get('name')} {harness.get('version')}, source sha256 {harness.get('source_sha256')}",
        *_program_lines(verified),
        *[f"member: {name} sha256:{digest}" for name, digest in sorted(verified.subjects.items())],
    ]


def _program_lines(verified: Verified) -> list[str]:
    """What ``bundle verify`` says of the re-judging, the requirement set, the declaration and staleness."""
    rejudged = verified.rejudged
    if rejudged is None:
        return []
    lines = [f"re-judged: every one of the {rejudged.cases} case verdicts and the run's verdict "
             f"({rejudged.status}) follow from the findings; report.json, junit.xml and certification.json agree",
             f"requirement set: {rejudged.requirements or 'none (the harness table of its version, unscored)'}"]
    declaration = rejudged.declaration
    if declaration is not None:
        signed = (f"signed by the vendor's key {verified.vendor_keyid}" if verified.vendor_keyid
                  else "not signed by the vendor")
        lines.append(f"declaration: {declaration.implementation} {declaration.version} ({declaration.contact}), "
                     f"claims {', '.join(sorted(declaration.claims)) or 'no optional feature'}; {signed}")
    else:
        lines.append("declaration: none (every optional feature taken as claimed)")
    lines.append("result: current" if not rejudged.stale else "result: STALE: " + "; ".join(rejudged.stale))
    return lines


def read_member(path: Path, name: str) -> bytes:
    """One member of a bundle (tests, and readers who want a file without unzipping)."""
    with zipfile.ZipFile(path) as archive:
        return archive.read(name)


def rewrite_member(path: Path, name: str, data: bytes) -> None:
    """Replace one member's bytes, keeping the rest (for tests of tampering)."""
    with zipfile.ZipFile(path) as archive:
        contents = {info.filename: archive.read(info) for info in archive.infolist()}
    contents[name] = data
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for member, blob in contents.items():
            archive.writestr(zipfile.ZipInfo(member, date_time=_EPOCH), blob, compress_type=zipfile.ZIP_DEFLATED)
    path.write_bytes(buffer.getvalue())


__all__ = [
    "ATTESTATION_NAME",
    "KEY_FILE",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "PUBLIC_KEY_NAME",
    "PUB_FILE",
    "STATEMENT_TYPE",
    "SUMMARY_NAME",
    "TARGET_NAME",
    "BundleRejected",
    "Verified",
    "certification_summary",
    "describe_verified",
    "generate_key",
    "load_public_key",
    "read_member",
    "rewrite_member",
    "statement",
    "verify_bundle",
    "write_bundle",
]
