"""Which IUT a fuzz failure was found against: recorded in its replay file, checked before it is replayed.

A replay file is evidence about one implementation under test, so it names
it: the role, and either the embedded reference (with the planted bug, for a
mutant) or the target file, the IUT's base URI and the SHA-256 fingerprint of
the certificate it presented (as certification reports record it in
``iut_certificate``; PROFILE.md P1-ID-1: "Every party is identified by the
URI SAN of its TLS certificate, which equals its base URI", so a base URI
names an IUT and the certificate tells a re-provisioned one apart). A
replay runs against the IUT its command line names; when that is not the
recorded one it is refused (:func:`replay_subject`), unless the caller asks
for another IUT explicitly, and then its result is never called a fix.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.harness.target import TargetConfig

CLEAN = ("none", "reference")
"""``--mutant none`` (or ``reference``): the embedded reference without a planted bug."""
OVERRIDE = "--against-other-iut"
"""The fuzz command's flag that replays a failure against another IUT than the recorded one."""


@dataclass(frozen=True)
class FuzzedIut:
    """The IUT of a fuzz campaign or of a replay."""

    role: str = "verifier"
    mutant: str | None = None
    """The planted bug of the embedded reference; None for the clean reference or a target."""
    target: str | None = None
    """The target file (absolute path); None for the embedded reference."""
    base_uri: str | None = None
    certificate: str | None = None
    """``sha256:…`` of the certificate the IUT presented (a target's; None when none was seen)."""

    @property
    def embedded(self) -> bool:
        return self.target is None

    @classmethod
    def of(cls, role: str, target: TargetConfig | None, mutant: str | None = None) -> FuzzedIut:
        """The IUT ``target`` (one TLS handshake reads its certificate), else the embedded reference."""
        if target is None:
            return cls(role, None if mutant in CLEAN else mutant)
        from sdcp_conformance.harness.check import iut_fingerprint

        source = str(target.source.resolve()) if target.source is not None else "(no target file)"
        return cls(role, None, source, target.base_uri, iut_fingerprint(target))

    def describe(self) -> str:
        if self.embedded:
            return f"the embedded reference {self.role}" + (f" with the planted bug {self.mutant!r}"
                                                            if self.mutant else "")
        return f"{self.base_uri} ({self.certificate or 'no certificate seen'}; target {self.target})"

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "embedded": self.embedded, "mutant": self.mutant, "target": self.target,
                "base_uri": self.base_uri, "iut_certificate": self.certificate}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], path: Path, *, role: str = "verifier") -> FuzzedIut:
        """The recorded IUT; a file from before these fields were recorded is the embedded reference's."""
        fields = {name: raw.get(name) for name in ("role", "mutant", "target", "base_uri", "iut_certificate")}
        bad = [name for name, value in fields.items() if value is not None and not isinstance(value, str)]
        if bad or not isinstance(raw.get("embedded", True), bool):
            raise InvalidArgument(f"{path}: {', '.join(bad) or 'embedded'} has the wrong type")
        if raw.get("embedded", True) or fields["target"] is None:
            return cls(fields["role"] or role, fields["mutant"])
        return cls(fields["role"] or role, None, fields["target"], fields["base_uri"], fields["iut_certificate"])

    def replay_command(self, path: Path) -> str:
        """The command that replays ``path`` against this IUT, runnable as printed (from any folder)."""
        words = ["sdcp-conformance", "fuzz"]
        if self.role != "verifier":
            words += ["--role", self.role]
        words += ["--replay", str(path.resolve())]
        if self.target is not None:
            words += ["--target", self.target]
        if self.mutant is not None:
            words += ["--mutant", self.mutant]
        return shlex.join(words)

    def difference(self, other: FuzzedIut) -> str | None:
        """Why ``other`` is not this IUT (None when it is), worded as what the replay would run against."""
        if self.embedded and other.embedded:
            return None if self.mutant == other.mutant else f"this replay would run {other.describe()}"
        if other.embedded:
            return f"without --target it would run {other.describe()}"
        if self.embedded or self.base_uri != other.base_uri:
            return f"--target {other.target} names another IUT, {other.base_uri}"
        if self.certificate is not None and other.certificate is None:
            return f"{other.base_uri} presented no certificate (is it running?): it cannot be told to be the same IUT"
        if self.certificate is not None and other.certificate != self.certificate:
            return f"{other.base_uri} now presents another certificate, {other.certificate}"
        return None


def one_iut(target: TargetConfig | None, mutant: str | None) -> None:
    """A campaign or a replay runs against one IUT: a target, or the embedded reference (with a planted bug or not);
    both is refused with a one-line :class:`InvalidArgument`."""
    if target is not None and mutant is not None:
        raise InvalidArgument("--mutant runs the embedded reference with a planted bug; it cannot go with --target")


def replay_subject(recorded: FuzzedIut, path: Path, *, role: str, target: TargetConfig | None,
                   mutant: str | None, other_iut: bool) -> tuple[FuzzedIut, bool]:
    """The IUT a replay of ``path`` runs against, and whether it is another IUT than ``recorded``.

    The command line names it: ``target``, else the embedded reference with ``mutant`` (the recorded mutant when
    no ``--mutant`` is given). Another IUT than the recorded one is refused (a one-line :class:`InvalidArgument`)
    unless ``other_iut``; another role always is (the steps are another role's).
    """
    if recorded.role != role:
        raise InvalidArgument(f"{path} is a {recorded.role} failure; replay it with --role {recorded.role}")
    one_iut(target, mutant)
    if target is None and mutant is None and recorded.embedded:
        mutant = recorded.mutant
    chosen = FuzzedIut.of(role, target, mutant)
    reason = recorded.difference(chosen)
    if reason is None:
        return chosen, False
    if other_iut:
        return chosen, True
    raise InvalidArgument(f"{path} failed against {recorded.describe()}; {reason}: replay it with "
                          f"`{recorded.replay_command(path)}`, or give {OVERRIDE} to replay it there anyway")


__all__ = ["CLEAN", "OVERRIDE", "FuzzedIut", "one_iut", "replay_subject"]
