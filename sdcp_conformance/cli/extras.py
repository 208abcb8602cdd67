"""The optional parts of the install (`pip install 'sdcp-conformance[EXTRA]'`) and the line naming a missing one.

The base install certifies an IUT through a target file (``pki init``, ``check``, ``certify --target``) and
imports no torch. The embedded reference stack (``certify`` without ``--target``, ``serve``, ``generate``,
``selftest``, ``fuzz`` without ``--target``) needs ``[reference]``; ``fuzz --api`` needs ``[fuzz-api]``;
``fuzz --database redis://…`` needs ``[redis]``. A command that needs a missing extra stops with
:class:`MissingExtra`: one line naming the extra and the install command, exit 2.
"""

from __future__ import annotations

import importlib.util

import click

EXTRAS: dict[str, tuple[str, ...]] = {
    "reference": ("torch", "safetensors", "tokenizers"),
    "fuzz-api": ("schemathesis",),
    "redis": ("redis",),
}
"""Each extra and the top-level modules it installs (``pyproject.toml``'s optional dependencies)."""

EXIT_MISSING_EXTRA = 2
"""A usage error: the install lacks what the command line asked for."""


class MissingExtra(click.ClickException):
    """A command needs an extra that is not installed; click prints ``Error: <message>`` and exits 2."""

    exit_code = EXIT_MISSING_EXTRA

    def __init__(self, extra: str, what: str) -> None:
        self.extra = extra
        super().__init__(f"{what} needs the [{extra}] extra, which is not installed: "
                         f"pip install 'sdcp-conformance[{extra}]'")


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


def require(extra: str, what: str) -> None:
    """Stop with :class:`MissingExtra` unless every module of ``extra`` is installed; ``what`` names the command
    (say "certify without --target (the embedded reference verifier)")."""
    if missing_modules(extra):
        raise MissingExtra(extra, what)


def extra_of(error: ModuleNotFoundError) -> str | None:
    """The extra that installs the module ``error`` could not find, if one does."""
    top = (error.name or "").partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


__all__ = ["EXIT_MISSING_EXTRA", "EXTRAS", "MissingExtra", "extra_of", "missing_modules", "require"]
