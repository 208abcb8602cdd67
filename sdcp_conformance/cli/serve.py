"""``sdcp-conformance serve`` (the whole stack or one role) and ``sdcp-conformance generate``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from sdcp_conformance.cli.seeds import SEED_METAVAR, SEED_TYPE, drawn_line, resolve_seed, seed_option
from sdcp_conformance.models.checkpoint import Checkpoint
from sdcp_conformance.reference.client import StackClient
from sdcp_conformance.reference.contracts import stack_contract
from sdcp_conformance.reference.roles import RunningRole, start_drafter, start_router, start_verifier
from sdcp_conformance.reference.stack import READY_LINE, STACK_FILE, Stack, StackOptions, load_model, resolve_model
from sdcp_conformance.reference.verifier.service import PartyTls
from sdcp_conformance.transport import event_loops
from sdcp_conformance.transport.pki import load_pki

console = Console(stderr=True)
UNKNOWN_TOKEN = "<unk>"
"""What the mock tokenizers encode a word outside their vocabulary to; ``generate`` refuses such a prompt."""


async def _until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def _options(**values: Any) -> StackOptions:
    return StackOptions(**{key: value for key, value in values.items() if value is not None})


stack_options = [
    click.option("--model", "target", default="bigram", show_default=True, help="Target: mock model id or folder."),
    click.option("--drafter", "drafters", multiple=True, help="Draft model per drafter (repeat). "
                 "Default: the mock drafters of the target."),
    click.option("--verifiers", default=1, show_default=True, type=click.IntRange(1, 8)),
    click.option("--device", default="cpu", show_default=True, help="torch device, e.g. cuda:0."),
    click.option("--dtype", default="float32", show_default=True, type=click.Choice(["float32", "bfloat16"])),
    click.option("--drafter-seed", "seed", default=0, show_default=True, type=SEED_TYPE, metavar=SEED_METAVAR,
                 help="Seed of the drafters' own randomness (fixed, so that a stack repeats itself)."),
]


def _with_stack_options(function: Any) -> Any:
    for option in reversed(stack_options):
        function = option(function)
    return function


def _default_drafters(target: str, drafters: tuple[str, ...]) -> tuple[str, ...]:
    if drafters:
        return drafters
    from sdcp_conformance.models.registry import load_manifest

    found = tuple(model.model_id for model in load_manifest().drafters_for(target))
    return found or (target,)


@click.group(invoke_without_command=True)
@_with_stack_options
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the PKI and stack.json go (default: a temporary folder).")
@click.pass_context
def serve(ctx: click.Context, target: str, drafters: tuple[str, ...], verifiers: int, device: str, dtype: str,
          seed: int, workdir: Path | None) -> None:
    """Run the whole reference stack on loopback (cache, router, verifiers, drafters) until Ctrl-C.

    Writes stack.json in the work folder; `generate --stack DIR` uses it.
    """
    if ctx.invoked_subcommand is not None:
        return
    options = _options(target=target, drafters=_default_drafters(target, drafters), verifiers=verifiers,
                       device=device, dtype=dtype, seed=seed)

    async def run() -> None:
        async with _workdir(workdir) as folder:
            stack = await Stack.start(folder, options)
            try:
                for name, uri in stack.uris.items():
                    console.print(f"{name:12} {uri}")
                console.print(f"stack description: {folder / STACK_FILE}  (Ctrl-C stops)")
                await _until_signalled()
            finally:
                await stack.stop()

    event_loops.run(run())


@contextlib.asynccontextmanager
async def _workdir(workdir: Path | None) -> AsyncIterator[Path]:
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    with tempfile.TemporaryDirectory(prefix="sdcp-stack-") as folder:
        yield Path(folder)


def _role_tls(pki_dir: Path, party: str, http: str) -> tuple[PartyTls, str]:
    from sdcp_conformance.errors import InvalidArgument
    from sdcp_conformance.transport.listeners import http_versions

    try:
        pki = load_pki(pki_dir)
        return PartyTls(pki.cert(party), pki.key(party), pki.ca_cert, http_versions(http)), pki.base_uris[party]
    except InvalidArgument as exc:  # a misnamed party or folder is a usage error, said in one line
        known = ""
        if (pki_dir / "pki.json").is_file():
            known = f" (parties: {', '.join(sorted(json.loads((pki_dir / 'pki.json').read_text())['parties']))})"
        raise click.BadParameter(f"{exc}{known}", param_hint="--party / --pki") from exc


def _https_uris(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback: every URI the option names is https:// with a host (§5.1: SDCP is HTTPS only), refused at
    start, in one line, as ``pki init --party`` refuses it; ``URI=MODEL`` (``--drafter``) is checked by its URI."""
    from urllib.parse import urlsplit

    for given in (value if isinstance(value, tuple) else (value,)):
        if given is None:
            continue
        uri = given.rpartition("=")[0] if param.name == "drafters" and "=" in given else given
        parts = urlsplit(uri)
        if parts.scheme != "https" or not parts.hostname:
            raise click.BadParameter(f"{uri!r} is not an https:// base URI: SDCP is HTTPS only (§5.1); give the "
                                     "https:// base URI the PKI names (`pki init` prints them)")
    return value


def _usage_error(message: str) -> NoReturn:
    """A misuse the command line cannot see (a stopped stack, a busy port): one line on stderr, exit 2."""
    click.echo(f"Error: {message}", err=True)
    raise SystemExit(2)


def _load_models(models: tuple[str, ...], device: str, dtype: str = "float32") -> list[Any]:
    from sdcp_conformance.errors import InvalidArgument

    try:
        return [load_model(model, device, dtype) for model in models]
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), param_hint="--model") from exc


def _checkpoint(model: str, option: str = "--model") -> Checkpoint:
    from sdcp_conformance.errors import InvalidArgument

    try:
        return Checkpoint.open(resolve_model(model))
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), param_hint=option) from exc


def _serving(run: Any, what: str) -> None:
    """``asyncio.run`` a server; a port that cannot be bound is a one-line usage error (exit 2)."""
    try:
        event_loops.run(run)
    except OSError as exc:
        _usage_error(f"{what} cannot listen: {exc.strerror or exc} (is another server on its port?)")


def _mutant_factory(mutant: str | None, role: str) -> Any:
    """The app factory of ``role``'s mutant named ``mutant`` (None: the reference); an unknown name is a usage error."""
    if mutant is None:
        return None
    from sdcp_conformance.errors import InvalidArgument
    from sdcp_conformance.mutants.catalogue import find_mutant

    try:
        return find_mutant(mutant, role)[1].factory
    except InvalidArgument as exc:
        raise click.BadParameter(str(exc), param_hint="--mutant") from exc


def _mutant_option(role: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    return click.option("--mutant", default=None, metavar="NAME",
                        help=f"Serve a mutant of the reference {role} (one planted bug; `selftest --role {role}` lists "
                        "them) to see what a failing certification looks like.")


async def _serve_role(start: Any) -> None:
    role: RunningRole = await start
    print(f"{READY_LINE}{role.base_uri}", flush=True)
    try:
        await _until_signalled()
    finally:
        await role.stop()


_http_option = click.option(
    "--http", type=click.Choice(["2", "3", "both"]), default="2", show_default=True,
    help="What the role's listener and its clients speak: HTTP/2 on TCP, HTTP/3 on UDP, or both on the base URI's "
         "port (the target's `http`).")


@serve.command("verifier")
@click.option("--pki", "pki_dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--party", default="verifier", show_default=True)
@click.option("--router", "router_uri", required=True, callback=_https_uris,
              help="The router's base URI (P1-TLS-2): https://, as `pki init` printed it.")
@click.option("--model", "models", multiple=True, default=("bigram",), show_default=True,
              help="Target model to serve: mock model id or folder (repeat to serve several, D-VER-9).")
@click.option("--device", default="cpu", show_default=True)
@click.option("--dtype", default="float32", show_default=True, type=click.Choice(["float32", "bfloat16"]))
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--pin-load", type=click.IntRange(0, 100), default=None,
              help="Report this load instead of the measured one (for tests of §6.5.2).")
@click.option("--load-hook", is_flag=True, default=False,
              help="Let the router's identity set the reported load: PUT <base URI>test-control/load with "
              '{"load": N} ({"load": null} gives it back), JSON. The harness does it for the §6.5.2 load cases '
              "when the target file says `load_hook = \"<base URI>test-control/load\"` under [target].")
@_http_option
@_mutant_option("verifier")
def serve_verifier(pki_dir: Path, party: str, router_uri: str, models: tuple[str, ...], device: str, dtype: str,
                   host: str, pin_load: int | None, load_hook: bool, http: str, mutant: str | None) -> None:
    """Run one reference verifier (or one of its mutants)."""
    factory = _mutant_factory(mutant, "verifier")
    tls, base_uri = _role_tls(pki_dir, party, http)
    runtimes = _load_models(models, device, dtype)
    if load_hook:
        from sdcp_conformance.reference.verifier.app import LOAD_HOOK_PATH

        console.print(f"load hook: PUT {base_uri}{LOAD_HOOK_PATH} (from {router_uri})", highlight=False)
    _serving(_serve_role(start_verifier(base_uri, tls, runtimes, router_uri, host=host, pinned_load=pin_load,
                                        app_factory=factory, load_hook=load_hook)), f"the verifier {base_uri}")


@serve.command("drafter")
@click.option("--pki", "pki_dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--party", default="drafter-1", show_default=True)
@click.option("--router", "routers", required=True, multiple=True, callback=_https_uris,
              help="A router's https:// base URI (repeat).")
@click.option("--cache", "cache_base", required=True, callback=_https_uris,
              help="MLC base URI where q_rows are written (P1-DRF-1).")
@click.option("--model", "models", multiple=True, default=("bigram-draft-near",), show_default=True,
              help="Draft model to serve: mock model id or folder (repeat to serve several, D-DRF-20).")
@click.option("--device", default="cpu", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@seed_option("Seed of the drafter's own randomness (D-DRF-9).")
@_http_option
@_mutant_option("drafter")
def serve_drafter(pki_dir: Path, party: str, routers: tuple[str, ...], cache_base: str, models: tuple[str, ...],
                  device: str, host: str, seed: int | None, http: str, mutant: str | None) -> None:
    """Run one reference drafter (or one of its mutants)."""
    factory = _mutant_factory(mutant, "drafter")
    tls, base_uri = _role_tls(pki_dir, party, http)
    if seed is None:
        seed = resolve_seed(None)
        console.print(drawn_line(seed), highlight=False)
    runtimes = [load_model(model, device) for model in models]
    _serving(_serve_role(start_drafter(base_uri, tls, runtimes, routers, cache_base, host=host, seed=seed,
                                       app_factory=factory)), f"the drafter {base_uri}")


@serve.command("router")
@click.option("--pki", "pki_dir", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--party", default="router", show_default=True)
@click.option("--cache", "cache_base", required=True, callback=_https_uris,
              help="MLC base URI for commit logs and token lists.")
@click.option("--verifier", "verifiers", required=True, multiple=True, callback=_https_uris,
              help="A verifier's base URI (repeat).")
@click.option("--drafter", "drafters", required=True, multiple=True, callback=_https_uris,
              help="URI=MODEL: a drafter's base URI and its model (id or folder), repeat (P1-RTR-2).")
@click.option("--host", default="127.0.0.1", show_default=True)
@_http_option
@_mutant_option("router")
def serve_router(pki_dir: Path, party: str, cache_base: str, verifiers: tuple[str, ...], drafters: tuple[str, ...],
                 host: str, http: str, mutant: str | None) -> None:
    """Run one reference router (or one of its mutants)."""
    factory = _mutant_factory(mutant, "router")
    tls, base_uri = _role_tls(pki_dir, party, http)
    models = {}
    for spec in drafters:
        uri, sep, model = spec.rpartition("=")
        if not sep:
            raise click.BadParameter(f"expected URI=MODEL, got {spec!r}", param_hint="--drafter")
        models[uri] = Checkpoint.open(resolve_model(model)).model_sha256
    _serving(_serve_role(start_router(base_uri, tls, cache_base=cache_base, drafters=models,
                                      verifiers=list(verifiers), host=host, app_factory=factory)),
             f"the router {base_uri}")


@click.command()
@click.option("--prompt", required=True, help="Prompt text (words of the mock tokenizer).")
@click.option("--rule", type=click.IntRange(1, 2), default=1, show_default=True)
@click.option("--max-new", type=click.IntRange(1), default=32, show_default=True)
@click.option("--temperature", type=float, default=None, help="Sampling temperature (rule 2; default 1.0).")
@click.option("--top-k", type=click.IntRange(0), default=None)
@click.option("--top-p", type=click.FloatRange(0, 1), default=None)
@seed_option("The contract's verifier seed (§6.4, rule 2): makes the output reproducible.", dest="sampling_seed")
@click.option("--stop", "stops", multiple=True, help="Stop token (word of the vocabulary), repeat.")
@click.option("--stack", "stack_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Folder of a running `serve` (its stack.json); default: start an embedded stack.")
@_with_stack_options
def generate(prompt: str, rule: int, max_new: int, temperature: float | None, top_k: int | None,
             top_p: float | None, sampling_seed: int | None, stops: tuple[str, ...], stack_dir: Path | None,
             target: str, drafters: tuple[str, ...], verifiers: int, device: str, dtype: str, seed: int) -> None:
    """Generate through the reference stack; prints committed tokens as they arrive."""
    if stack_dir is not None:
        described = _stack_description(stack_dir)
        target, drafters = described["target"], tuple(described["drafters"])
    drafters = _default_drafters(target, drafters)
    checkpoint = _checkpoint(target)
    tokenizer = checkpoint.tokenizer()
    encoded = tokenizer.encode(prompt)
    prompt_ids = encoded.ids
    if not prompt_ids:
        raise click.BadParameter("the prompt encodes to no tokens", param_hint="--prompt")
    unknown = [prompt[start:end] for token, (start, end) in zip(encoded.tokens, encoded.offsets, strict=True)
               if token == UNKNOWN_TOKEN]
    if unknown:
        raise click.BadParameter(f"{', '.join(repr(word) for word in unknown)} not in the vocabulary of {target} "
                                 f"({tokenizer.get_vocab_size()} words; see its tokenizer.json)",
                                 param_hint="--prompt")
    if rule == 2 and sampling_seed is None:  # rule 1 is greedy: no seed matters there
        sampling_seed = resolve_seed(None)
        console.print(drawn_line(sampling_seed), highlight=False)
    stop_ids = []
    for word in stops:
        token = tokenizer.token_to_id(word)
        if token is None:
            raise click.BadParameter(f"{word!r} is not in the vocabulary", param_hint="--stop")
        stop_ids.append(token)
    contract = stack_contract(
        checkpoint, [_checkpoint(d, "--drafter") for d in drafters], rule=rule, max_new=max_new, stop=stop_ids,
        temperature_milli=None if temperature is None else round(temperature * 1000), top_k=top_k,
        top_p_milli=None if top_p is None else round(top_p * 1000), seed=sampling_seed,
    )
    options = _options(target=target, drafters=drafters, verifiers=verifiers, device=device, dtype=dtype, seed=seed)
    tokens = event_loops.run(_generate(stack_dir, options, contract, prompt_ids, tokenizer, max_new))
    click.echo(" ".join(str(token) for token in tokens))
    click.echo(tokenizer.decode(tokens))


async def _generate(stack_dir: Path | None, options: StackOptions, contract: dict[str, Any], prompt: list[int],
                    tokenizer: Any, max_new: int) -> list[int]:
    async with contextlib.AsyncExitStack() as exits:
        if stack_dir is None:
            folder = await exits.enter_async_context(_workdir(None))
            console.print("starting an embedded reference stack…")
            stack = await Stack.start(folder, options)
            exits.push_async_callback(stack.stop)
            pki_dir, uris = stack.pki.directory, stack.uris
        else:
            described = _stack_description(stack_dir)
            pki_dir, uris = _stack_pki(stack_dir, described), described["uris"]
            _require_running(stack_dir, uris["router"])
        tls, _ = _role_tls(pki_dir, "client", "2")
        client = StackClient(uris["router"], tls)
        exits.push_async_callback(client.aclose)
        progress = Progress(TextColumn("committed"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=console)
        task = progress.add_task("tokens", total=max_new)
        with Live(progress, console=console, refresh_per_second=8):

            def show(fresh: list[int]) -> None:
                progress.advance(task, len(fresh))
                progress.console.print(Text(f"+ {tokenizer.decode(fresh)}", style="green"))

            result = await client.generate(contract, prompt, show)
        console.print(f"finish: {result.finish.name.lower() if result.finish else 'none'}, "
                      f"{len(result.tokens)} tokens, verifiers: {', '.join(result.verifiers)}")
        return result.tokens


def _stack_description(stack_dir: Path) -> dict[str, Any]:
    path = stack_dir / STACK_FILE
    if not path.is_file():
        _usage_error(f"{stack_dir} holds no {STACK_FILE}: give the --workdir of a running "
                     "`sdcp-conformance serve --workdir DIR`")
    try:
        described: dict[str, Any] = json.loads(path.read_text())
    except ValueError as exc:
        _usage_error(f"{path} is not a stack description: {exc}")
    return described


def _stack_pki(stack_dir: Path, described: dict[str, Any]) -> Path:
    """The stack's PKI: stack.json names it relative to where `serve` started, so from elsewhere look beside it."""
    for candidate in (Path(described["pki"]), stack_dir / "pki", stack_dir / Path(described["pki"]).name):
        if (candidate / "pki.json").is_file():
            return candidate
    _usage_error(f"the PKI of the stack in {stack_dir} is gone (looked for {described['pki']} and "
                        f"{stack_dir / 'pki'})")


def _require_running(stack_dir: Path, router_uri: str) -> None:
    """A stopped stack is said in one line, before any request waits on it."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(router_uri)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 443), timeout=5.0).close()
    except OSError:
        _usage_error(f"the stack in {stack_dir} is not running: nothing answers at its router {router_uri}; "
                     f"start it with `sdcp-conformance serve --workdir {stack_dir}`")


__all__ = ["generate", "serve"]
