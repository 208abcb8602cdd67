"""Setting a vendor verifier's load from the harness (``load:control``), and what each capability needs.

The §6.5.2 cases that need the IUT's load to *change* while they run
(``VER-6.5-ESC-009``: self-decoding must stop once the load exceeds
``self_load``) run against the embedded reference, whose load the harness
pins in-process, and against any verifier whose target file names a way to
set it — one of:

``[target] load_hook = "https://…/load"``
    The harness ``PUT``s ``{"load": N}`` (JSON, ``content-type:
    application/json``) to this URI, over TLS 1.3 with its router certificate
    (the harness's ``[harness] router`` identity), trusting ``[target] ca``;
    ``{"load": null}`` when the case ends gives the load back to the IUT's own
    measure. Any 2xx answer means done. ``serve verifier --load-hook`` offers
    it on the reference, at ``test-control/load`` under its base URI
    (:data:`sdcp_conformance.reference.verifier.app.LOAD_HOOK_PATH`).

``[target] load_command = "my-tool set-load {load}"``
    The harness runs this command (split as a shell would, run without one)
    with ``{load}`` replaced by N, or by ``none`` when the case ends; exit 0
    means done, within :data:`COMMAND_TIMEOUT_S`.

Either way a load that could not be set makes the case INCOMPLETE (P1-JUDGE-4),
naming the hook or command and what it answered: the harness could not run its
control step, so it judges nothing about the verifier.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from sdcp_conformance.errors import InvalidArgument

HOOK_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 30.0
RELEASED = "none"
"""What ``{load}`` becomes in ``load_command`` when the case gives the load back."""


class LoadControlError(InvalidArgument):
    """The target's load hook or command did not set the load (one line: which, and what it answered)."""


def check_load_hook(uri: str, where: str) -> str:
    parts = urlsplit(uri)
    if parts.scheme != "https" or not parts.hostname:
        raise InvalidArgument(f"{where}: [target] load_hook {uri!r} must be an https:// URI (the harness PUTs "
                              '{"load": N} to it)')
    return uri


def check_load_command(command: str, where: str) -> str:
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise InvalidArgument(f"{where}: [target] load_command {command!r} does not split into words: {exc}") from exc
    if not words or not any("{load}" in word for word in words):
        raise InvalidArgument(f"{where}: [target] load_command must name {{load}}, e.g. \"my-tool set-load {{load}}\"")
    return command


async def put_load(uri: str, load: int | None, *, cert: Path, key: Path, ca: Path,
                   timeout_s: float = HOOK_TIMEOUT_S, http: str = "2") -> None:
    """``PUT uri`` with ``{"load": load}``; raises :class:`LoadControlError` unless a 2xx answers."""
    from sdcp_conformance.transport.failures import TransportFailure
    from sdcp_conformance.transport.listeners import client_for, http_versions

    parts = urlsplit(uri)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    body = json.dumps({"load": load}).encode()
    try:
        async with client_for(http_versions(http), f"https://{parts.netloc}/", cert, key, ca) as client:
            answer = await client.request("PUT", path, body, headers={"content-type": "application/json"},
                                          retry=True, timeout=timeout_s)
    except (TransportFailure, OSError) as exc:
        raise LoadControlError(f"the load hook {uri} did not answer PUT {body.decode()}: {exc}") from exc
    if not answer.ok:
        text = answer.body[:200].decode("utf-8", "replace")
        raise LoadControlError(f"the load hook {uri} answered {answer.status} to PUT {body.decode()}: {text}")


def command_words(command: str, load: int | None) -> list[str]:
    return [word.replace("{load}", RELEASED if load is None else str(load)) for word in shlex.split(command)]


async def run_load_command(command: str, load: int | None, *, timeout_s: float = COMMAND_TIMEOUT_S) -> None:
    """Run ``command`` with ``{load}`` filled in; raises :class:`LoadControlError` unless it exits 0 in time."""
    words = command_words(command, load)
    try:
        process = await asyncio.create_subprocess_exec(*words, stdin=asyncio.subprocess.DEVNULL,
                                                       stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        raise LoadControlError(f"the load command `{shlex.join(words)}` could not start: {exc}") from exc
    try:
        _, errors = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise LoadControlError(f"the load command `{shlex.join(words)}` did not finish within {timeout_s:g} s") \
            from None
    if process.returncode != 0:
        said = errors.decode("utf-8", "replace").strip().splitlines()
        raise LoadControlError(f"the load command `{shlex.join(words)}` exited {process.returncode}"
                               + (f": {said[-1]}" if said else ""))


__all__ = [
    "COMMAND_TIMEOUT_S",
    "HOOK_TIMEOUT_S",
    "RELEASED",
    "LoadControlError",
    "check_load_command",
    "check_load_hook",
    "command_words",
    "put_load",
    "run_load_command",
]
