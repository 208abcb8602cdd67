"""Read the README's shell code blocks into commands the README test runs, as written.

Generic on purpose: other sections arrive while the harness grows, and each
new command is run without anyone listing it. What is not run is said in one
small, explicit table (:data:`NOT_RUN`), each entry with its reason; servers
(:data:`SERVERS`) are started in the background, awaited on their ready
line, and stopped once the block that started them has run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^```(\w*)\s*$")
EXIT_COMMENT = re.compile(r"#\s*exit (\d+)\b")

NOT_RUN: tuple[tuple[str, str], ...] = (
    (r"^pip install ", "installs into the environment this test runs in (CI's .ci/run runs it first)"),
    (r"^python -m pytest\b", "the test suite itself, of which this walker is a part"),
    (r"^(ruff check \.|mypy)$", "the linters over the whole tree: a development check, not a harness command"),
    (r"^python benchmarks/", "benchmarks measure for minutes and print figures; tests never time anything"),
    (r"--budget \d+m\b", "runs for its ten-minute budget"),
    (r"fuzz --messages --examples 20000\b", "twenty thousand hostile messages: minutes, CI fuzzes less"),
    (r"fuzz --api --examples 3000\b", "three thousand schemathesis cases: minutes, CI fuzzes less"),
    (r"<file>", "a placeholder for the replay file a failing campaign saves"),
    (r"^sdcp-conformance selftest --role (drafter|router)$",
     "a role's whole kill matrix (every mutant against every case): many minutes; the role's mutant tests run "
     "each mutant's recorded killers under five seeds"),
)
"""(pattern, why): the commands the walker deliberately does not run."""

SERVERS: tuple[tuple[str, str], ...] = (
    (r"^sdcp-conformance serve --workdir ", "stack description:"),
    (r"^sdcp-conformance serve (verifier|drafter|router|cache) ", "serving "),
)
"""(pattern, ready line): long-running servers, started in the background and stopped after their block."""


@dataclass(frozen=True)
class Command:
    text: str
    block: int
    """Index of the code block it came from (servers stop when their block is done)."""
    language: str
    expected_exit: int = 0
    """A trailing ``# exit N: …`` comment says the command is meant to exit N (a diff that finds a regression)."""

    @property
    def not_run(self) -> str | None:
        return next((why for pattern, why in NOT_RUN if re.search(pattern, self.text)), None)

    @property
    def ready_line(self) -> str | None:
        return next((ready for pattern, ready in SERVERS if re.search(pattern, self.text)), None)


def blocks(text: str) -> list[tuple[str, list[str]]]:
    """(language, lines) of every fenced code block."""
    found: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    language = ""
    for line in text.splitlines():
        fence = FENCE.match(line.strip())
        if fence and current is None:
            current, language = [], fence.group(1)
        elif line.strip() == "```" and current is not None:
            found.append((language, current))
            current = None
        elif current is not None:
            current.append(line)
    return found


def _strip_comment(line: str) -> str:
    """The command before a trailing ``# comment`` (a ``#`` inside quotes stays)."""
    quoted = ""
    for index, char in enumerate(line):
        if char in "'\"":
            quoted = "" if quoted == char else (quoted or char)
        elif char == "#" and not quoted and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line.rstrip()


def commands(text: str) -> list[Command]:
    """Every shell command of the README's ``sh`` blocks (continuations joined, comments dropped), and every
    ``python`` block as one program."""
    found: list[Command] = []
    for number, (language, lines) in enumerate(blocks(text)):
        if language == "python":
            found.append(Command("\n".join(lines), number, "python"))
            continue
        if language not in ("sh", "bash", "shell", "console"):
            continue
        pending = ""
        for raw in lines:
            line = raw.rstrip()
            if not _strip_comment(line).strip() and not pending:
                continue  # blank, or a comment line
            if line.endswith("\\"):
                pending += line[:-1].strip() + " "
                continue
            whole = (pending + line.strip()).strip()
            pending = ""
            stated = EXIT_COMMENT.search(whole[len(_strip_comment(whole)):])
            whole = _strip_comment(whole)
            if whole:
                found.append(Command(whole, number, "sh", int(stated.group(1)) if stated else 0))
    return found


def readme(root: Path) -> str:
    return (root / "README.md").read_text(encoding="utf-8")


__all__ = ["NOT_RUN", "SERVERS", "Command", "blocks", "commands", "readme"]
