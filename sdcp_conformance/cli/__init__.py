"""The ``sdcp-conformance`` command line.

Commands are imported when they run (:class:`LazyGroup`): ``--version``,
``--help``, ``pki``, ``report``, ``bundle`` and ``check`` answer without
importing torch, the suites or schemathesis (``benchmarks/bench_cli_startup.py``
measures it). Their one-line help is kept here, beside the import path; a
test holds it equal to each command's own.
"""

from __future__ import annotations

import errno
import importlib
from typing import Any

import click

from sdcp_conformance import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "bundle": ("sdcp_conformance.cli.report:bundle",
               "Signed certification bundles (`certify --bundle FILE` writes them)."),
    "certify": ("sdcp_conformance.cli.certify:certify",
                "Certify an SDCP verifier, drafter or router against the draft and the interop profile."),
    "declare": ("sdcp_conformance.cli.declare:declare",
                "Write the declaration a vendor fills in: its implementation and the optional features it claims."),
    "check": ("sdcp_conformance.cli.check:check",
              "Preflight: is the IUT of a target file ready to be certified? One line per check."),
    "fuzz": ("sdcp_conformance.cli.fuzz:fuzz",
             "Fuzz a verifier, drafter or router IUT (--role): Hypothesis-generated sequences, shrunk failures saved "
             "for replay."),
    "generate": ("sdcp_conformance.cli.serve:generate",
                 "Generate through the reference stack; prints committed tokens as they arrive."),
    "info": ("sdcp_conformance.cli:info",
             "Print the version and, per role, the conformance areas certify reports (with their case counts)."),
    "pki": ("sdcp_conformance.cli.pki:pki",
            "Test PKI: a CA and URI-SAN certificates for SDCP parties (P1-ID-1)."),
    "report": ("sdcp_conformance.cli.report:report",
               "Look at past runs: the console view, a comparison of two runs, the HTML page."),
    "selftest": ("sdcp_conformance.cli.selftest:selftest",
                 "Certify a role's reference and every mutant; exit non-zero if the reference fails or a mutant "
                 "survives."),
    "serve": ("sdcp_conformance.cli.serve:serve",
              "Run the whole reference stack on loopback (cache, router, verifiers, drafters) until Ctrl-C."),
}
"""Command → (``module:attribute``, its short help as ``--help`` lists it)."""


def load_command(name: str) -> click.Command:
    module, _, attribute = COMMANDS[name][0].partition(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    if name == "serve" and isinstance(command, click.Group) and "cache" not in command.commands:
        from sdcp_conformance.cli.serve_cache import serve_cache

        command.add_command(serve_cache)
    return command


class OneLineError(click.ClickException):
    """A user error said as ``Error: …`` on one line of stderr (click's own usage errors print four)."""

    exit_code = 2

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(" ".join(message.split()))
        setattr(self, "exit_code", exit_code)  # noqa: B010 (click declares it a class variable; it is read per error)


PARSE_ERRORS = (click.NoSuchOption, click.BadOptionUsage, click.BadArgumentUsage, click.MissingParameter)
"""click's own complaints about a command line: the one line then says where the options are listed."""


def one_line(error: BaseException) -> OneLineError | None:
    """The one-line form of a user error escaping a command (None: not a user error, let it through).

    Usage errors keep exit 2; an :class:`~sdcp_conformance.errors.InvalidArgument` is a usage error; an
    ``OSError`` naming a file (a folder that cannot be created, a report that cannot be written) says the file
    and why, exit 2. Everything else is a bug and keeps its traceback.
    """
    from sdcp_conformance.errors import InvalidArgument

    if isinstance(error, OneLineError):
        return error
    if isinstance(error, click.UsageError):
        message = error.format_message()
        if isinstance(error, PARSE_ERRORS) and error.ctx is not None:
            message = message.rstrip(".") + f" (`{error.ctx.command_path} --help` lists the options)"
        return OneLineError(message, error.exit_code)
    if isinstance(error, click.ClickException):
        return OneLineError(error.format_message(), error.exit_code)
    if isinstance(error, InvalidArgument):
        return OneLineError(str(error))
    if isinstance(error, OSError) and error.filename is not None and error.errno != errno.EPIPE:
        return OneLineError(f"{error.filename}: {error.strerror or error} (check the path and its permissions)")
    return None


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked (click's documented lazy-loading pattern).

    Every user error of every command comes out as one line (:func:`one_line`), never a traceback.
    """

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as error:
            raise one_line(error) or error from error

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort):
            raise
        except Exception as error:
            said = one_line(error)
            if said is None:
                raise
            raise said from error

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in COMMANDS:
            return None
        try:
            return load_command(cmd_name)
        except ModuleNotFoundError as error:  # the command's module needs an extra this install lacks
            from sdcp_conformance.cli.extras import MissingExtra, extra_of

            extra = extra_of(error)
            if extra is None:
                raise
            raise MissingExtra(extra, f"`sdcp-conformance {cmd_name}`") from error

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS and name not in self.commands:
            from difflib import get_close_matches

            close = get_close_matches(name, list(COMMANDS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            ctx.fail(f"no such command {name!r}{hint}; `sdcp-conformance --help` lists them")
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, invoke_without_command=True)
@click.version_option(__version__, prog_name="sdcp-conformance")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Conformance harness and fuzzer for SDCP implementations."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(info)


VERIFIER_AREAS: dict[str, str] = {
    "sanity": "§6.1–6.3: open a session, one valid round (runs first and last)",
    "transport": "§5.1 HTTP/2 or HTTP/3 over TLS 1.3 with mutual certificates",
    "contract": "§4.1 session contract validation and contract digest",
    "session": "§6.1 session creation, d[0] and drafter assignment",
    "authorization": "§6.3 step 1: only the latest assigned drafter",
    "fencing": "§6.3 step 2, §6.8, §6.9: epochs and fenced commit logs",
    "idempotency": "§6.3 step 3: retried and concurrent identical proposals",
    "stale-base": "§4.2, §6.3 step 4: digest chain, base and round checks",
    "limits": "§6.2, §6.5.1: M within m_max and m_cap",
    "q-preconditions": "§6.3 step 5: draft rows fetched and checked before any draw",
    "rule-1": "§6.4 rule 1: greedy exactness",
    "rule-2": "§6.4 rule 2: speculative sampling, seeded exactness and distribution",
    "commit-log": "§6.3 commit, §6.8: records before verdicts and output",
    "output": "§6.7: stable indices, long-poll, epochs, final message",
    "truncation": "§6.3: stop tokens and max_new",
    "escalation": "§6.5: low rounds, reduce, switch, self_decode, fail",
    "policy": "§6.6: sampling policy updates from from_round",
    "recovery": "§6.9: failover resume at a new epoch",
    "closed": "§6.5.2, §6.7, P1-CTL-3: a finished or failed session takes no more work; output stays readable",
}
"""What the verifier suite's areas check, in words; any area without an entry is described by its sections."""


def role_areas(role: str) -> list[tuple[str, int, str]]:
    """(area, number of cases, description) of a role's suite: exactly the areas ``certify`` reports."""
    from sdcp_conformance.harness.certify import default_catalogue

    cases = list(default_catalogue(role).cases.values())
    found: dict[str, list[Any]] = {}
    for case in cases:
        found.setdefault(case.area, []).append(case)
    rows = []
    for area, members in found.items():
        described = VERIFIER_AREAS.get(area) if role == "verifier" else None
        rows.append((area, len(members), described or sections_text(case.section for case in members)))
    return rows


def sections_text(sections: Any) -> str:
    """The distinct references of cases' ``section`` fields (each may name several: ``"6.2, 6.5.1, P1-MSG-1"``):
    the draft's sections first, in numeric order, each with its §, then the profile's items (``P1-…``)."""
    references = {part.strip().lstrip("§") for section in sections for part in str(section).split(",")}
    references.discard("")
    draft = sorted((ref for ref in references if not ref.startswith("P1-")), key=_section_key)
    profile = sorted((ref for ref in references if ref.startswith("P1-")), key=_section_key)
    return ", ".join([*(f"§{ref}" for ref in draft), *profile])


def _section_key(section: str) -> tuple[str, ...]:
    return tuple(part.zfill(4) if part.isdigit() else part for part in section.replace("-", ".").split("."))


@main.command()
@click.option("--role", "roles", multiple=True, help="Only this role's areas (repeatable; default: every role).")
@click.option("--decisions", "show_decisions", is_flag=True,
              help="Print the judging decisions (D-JUDGE-…) instead of the areas: each one's ID, the rows it shapes, "
                   "the module that applies it and what it reads where the draft and the profile are silent. With "
                   "--role, only those that shape that role's verdicts.")
@click.option("--requirements", "show_requirements", is_flag=True,
              help="List the released requirement sets (the newest is certify's default), oldest first.")
def info(roles: tuple[str, ...], show_decisions: bool, show_requirements: bool) -> None:
    """Print the version and, per role, the conformance areas certify reports (with their case counts)."""
    from rich.console import Console
    from rich.table import Table

    from sdcp_conformance.harness.suites import SUITES

    if show_requirements:
        from sdcp_conformance.judge.requirement_sets import load_set, manifest, newest_name

        for entry in manifest():
            held = load_set(entry["name"])
            newest = " (newest: certify's default)" if held.name == newest_name() else " (superseded)"
            click.echo(f"{held.name}{newest}: released {held.released.isoformat()}, {len(held.rows)} rows scored, "
                       f"{len(held.not_scored)} not scored, SHA-256 {held.sha256}")
        return

    if show_decisions:
        import shutil
        import textwrap

        from sdcp_conformance.judge.decisions import DECISIONS, INTRODUCTION, concerns, decisions_text

        for role in roles:
            if role not in SUITES:
                raise click.BadParameter(f"no role {role!r} (known: {', '.join(SUITES)})", param_hint="--role")
        width = max(60, min(120, shutil.get_terminal_size((120, 24)).columns))
        shown = [listed for listed in DECISIONS if not roles or any(concerns(listed, role) for role in roles)]
        scope = f" that shape a {' or '.join(roles)}'s verdicts" if roles else ""
        click.echo(f"sdcp-conformance {__version__}: {len(shown)} judging decisions{scope}\n")
        click.echo(textwrap.fill(INTRODUCTION.replace("`", ""), width) + "\n")
        click.echo(decisions_text(shown, width))
        return
    console = Console()
    console.print(f"sdcp-conformance {__version__}", highlight=False)
    for role in roles or tuple(SUITES):
        if role not in SUITES:
            raise click.BadParameter(f"no role {role!r} (known: {', '.join(SUITES)})", param_hint="--role")
        rows = role_areas(role)
        table = Table(title=f"{role}: {sum(count for _, count, _ in rows)} cases in {len(rows)} areas")
        table.add_column("area", no_wrap=True)
        table.add_column("cases", justify="right")
        table.add_column("what the draft requires")
        for area, count, text in rows:
            table.add_row(area, str(count), text)
        console.print(table)


__all__ = ["COMMANDS", "VERIFIER_AREAS", "LazyGroup", "OneLineError", "load_command", "main", "one_line", "role_areas",
           "sections_text"]
