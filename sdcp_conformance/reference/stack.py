"""The whole reference stack on loopback: cache, router, verifier(s) and drafters, with a fresh PKI.

Roles run in this process (one event loop) by default; verifiers can run as
separate processes instead (``verifier_processes=True``), which is what the
failover test kills. Ports are chosen free at start; every party's
certificate names its base URI, port included (P1-ID-1).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.registry import mock_model
from sdcp_conformance.reference.roles import RunningRole, start_cache, start_drafter, start_router, start_verifier
from sdcp_conformance.reference.running import READY_LINE
from sdcp_conformance.reference.scoring import RuntimeModel
from sdcp_conformance.reference.verifier.service import PartyTls
from sdcp_conformance.transport.pki import Pki, init_pki
from sdcp_conformance.transport.ports import free_port

STACK_FILE = "stack.json"
REPORTS_TIMEOUT_S = 60.0
"""How long a starting stack waits for every instance's first status at the router."""


def resolve_model(name: str) -> Path:
    """A checkpoint folder given as a path, or a shipped mock model's manifest id."""
    path = Path(name)
    if (path / "model.safetensors").is_file():
        return path
    return mock_model(name).path


def load_model(name: str, device: str = "cpu", dtype: str = "float32") -> RuntimeModel:
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}.get(dtype)
    if torch_dtype is None:
        raise InvalidArgument(f"dtype must be float32 or bfloat16, not {dtype!r}")
    return RuntimeModel.load(resolve_model(name), device=device, dtype=torch_dtype)


@dataclass(frozen=True)
class StackOptions:
    target: str = "bigram"
    drafters: tuple[str, ...] = ("bigram-draft-near", "bigram-draft-far")
    verifiers: int = 1
    verifier_processes: bool = False
    device: str = "cpu"
    dtype: str = "float32"
    host: str = "127.0.0.1"
    pinned_load: int | None = None
    seed: int | None = 0
    cache_db: Path | None = None
    m_init: int = 4
    reproducible: bool = False
    """Drafters choose M from priors, not measured times (D-DRF-17), so seeded runs repeat."""


@dataclass
class Stack:
    """A running reference stack; :meth:`stop` ends every role and process it started."""

    options: StackOptions
    pki: Pki
    uris: dict[str, str]
    roles: dict[str, RunningRole] = field(default_factory=dict)
    processes: dict[str, asyncio.subprocess.Process] = field(default_factory=dict)

    @classmethod
    async def start(cls, workdir: Path, options: StackOptions | None = None) -> Stack:
        options = options or StackOptions()
        if options.verifiers < 1 or not options.drafters:
            raise InvalidArgument("a stack needs at least one verifier and one drafter")
        names = ["router", "cache", *[f"verifier-{i}" for i in range(1, options.verifiers + 1)],
                 *[f"drafter-{i}" for i in range(1, len(options.drafters) + 1)], "client"]
        uris = {name: f"https://{options.host}:{free_port(options.host)}/{name}/" for name in names}
        stack = cls(options, init_pki(workdir / "pki", uris), uris)
        try:
            await stack._start_roles(workdir)
            await stack._await_first_reports()
        except BaseException:
            await stack.stop()
            raise
        stack.write_description(workdir / STACK_FILE)
        return stack

    def tls(self, name: str) -> PartyTls:
        return PartyTls(self.pki.cert(name), self.pki.key(name), self.pki.ca_cert)

    @property
    def verifier_names(self) -> list[str]:
        return [name for name in self.uris if name.startswith("verifier-")]

    @property
    def drafter_names(self) -> list[str]:
        return [name for name in self.uris if name.startswith("drafter-")]

    async def _start_roles(self, workdir: Path) -> None:
        options, uris = self.options, self.uris
        cache_tls = self.tls("cache")
        self.roles["cache"] = await start_cache(uris["cache"], cache_tls, db=options.cache_db, host=options.host)
        drafter_models = {name: load_model(model, options.device, options.dtype)
                          for name, model in zip(self.drafter_names, options.drafters, strict=True)}
        self.roles["router"] = await start_router(
            uris["router"], self.tls("router"), cache_base=uris["cache"],
            drafters={uris[name]: model.model_sha256 for name, model in drafter_models.items()},
            verifiers=[uris[name] for name in self.verifier_names], m_init=options.m_init, host=options.host,
        )
        for name in self.verifier_names:
            await self.start_verifier(name, workdir)
        for index, (name, model) in enumerate(drafter_models.items()):
            seed = None if options.seed is None else options.seed + index
            self.roles[name] = await start_drafter(
                uris[name], self.tls(name), model, [uris["router"]], uris["cache"], host=options.host, seed=seed,
                measured_timing=not options.reproducible,
            )

    async def _await_first_reports(self) -> None:
        """Ready means every verifier and drafter is eligible at the router (P1-RTR-2).

        Without this wait a client's first session could reach the router
        before any verifier's first status report and be refused with 503.
        """
        router = self.roles["router"].app
        instances = [self.uris[name] for name in (*self.verifier_names, *self.drafter_names)]
        try:
            await asyncio.wait_for(router.wait_until_live(instances), REPORTS_TIMEOUT_S)
        except TimeoutError:
            silent = router.not_live(instances)
            raise InvalidArgument(
                f"the stack's router has no live status from {silent} after {REPORTS_TIMEOUT_S:.0f} s"
            ) from None

    async def start_verifier(self, name: str, workdir: Path) -> None:
        options = self.options
        if options.verifier_processes:
            self.processes[name] = await _spawn_verifier(self, name, workdir)
            return
        model = load_model(options.target, options.device, options.dtype)
        self.roles[name] = await start_verifier(
            self.uris[name], self.tls(name), model, self.uris["router"], host=options.host,
            pinned_load=options.pinned_load,
        )

    async def kill(self, name: str) -> None:
        """SIGKILL a role process, or stop an in-process role, without any goodbye."""
        if name in self.processes:
            process = self.processes.pop(name)
            process.send_signal(signal.SIGKILL)
            await process.wait()
        elif name in self.roles:
            await self.roles.pop(name).stop()

    async def stop(self) -> None:
        for name in list(self.processes):
            await self.kill(name)
        # Reporters first, then whom they report to: no status or event is sent to a stopped router.
        for name in (*self.drafter_names, *self.verifier_names, "router", "cache"):
            role = self.roles.pop(name, None)
            if role is not None:
                await role.stop()

    def description(self) -> dict[str, Any]:
        return {
            "uris": self.uris,
            "pki": str(self.pki.directory),
            "target": self.options.target,
            "drafters": list(self.options.drafters),
        }

    def write_description(self, path: Path) -> None:
        path.write_text(json.dumps(self.description(), indent=2) + "\n")


async def _spawn_verifier(stack: Stack, name: str, workdir: Path) -> asyncio.subprocess.Process:
    options = stack.options
    command = [
        sys.executable, "-m", "sdcp_conformance.cli", "serve", "verifier",
        "--pki", str(stack.pki.directory), "--party", name, "--router", stack.uris["router"],
        "--model", options.target, "--device", options.device, "--dtype", options.dtype, "--host", options.host,
    ]
    if options.pinned_load is not None:
        command += ["--pin-load", str(options.pinned_load)]
    log = (workdir / f"{name}.log").open("ab")
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    log.close()
    try:
        await asyncio.wait_for(_ready(process), 120)
    except BaseException:
        process.kill()
        await process.wait()
        raise
    return process


async def _ready(process: asyncio.subprocess.Process) -> None:
    assert process.stdout is not None
    while True:
        line = await process.stdout.readline()
        if not line:
            raise InvalidArgument(f"role process exited with {await process.wait()} before it was ready")
        if line.decode().startswith(READY_LINE):
            return


__all__ = ["READY_LINE", "STACK_FILE", "Stack", "StackOptions", "free_port", "load_model", "resolve_model"]
