"""Hypothesis' persistent example database: a directory by default, Redis when a URL is given.

Parallel CI workers that point at one Redis share their corpus; the Redis
client is imported only when asked for, and its absence is reported plainly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test

from sdcp_conformance.errors import InvalidArgument

DEFAULT_DIRECTORY = Path(".sdcp-fuzz") / "examples"


def open_database(spec: str | None) -> ExampleDatabase | None:
    """``None`` or ``""``: no database; ``redis://…`` or ``rediss://…``: Redis; anything else: a directory."""
    if not spec:
        return None
    if spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis  # type: ignore[import-not-found,unused-ignore]
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError as exc:
            raise InvalidArgument(f"--database {spec}: the Redis database needs the [redis] extra "
                                  f"(pip install 'sdcp-conformance[redis]'): {exc}") from exc
        return RedisExampleDatabase(redis.Redis.from_url(spec))
    return DirectoryBasedExampleDatabase(str(Path(spec)))


Test = TypeVar("Test", bound=Callable[..., Any])


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Hypothesis' generation with no constants harvested from the program that runs it.

    D-FUZZ-REPRO: Hypothesis (6.131 and later) draws about one value in twenty from the literal constants of the
    "local" modules loaded in ``sys.modules``, so the same seed generates other sequences in another program, or
    after one more module was imported: a seeded campaign found a planted bug in a fresh process and missed it once
    ``sdcp_conformance.cli.fuzz`` had been imported. A seed must name one campaign wherever it runs (a vendor's CI,
    a replay, our tests), so while a fuzzer runs the harvested pool is empty; Hypothesis' own constants (boundary
    values, special floats and strings) stay. The hook is a private one of Hypothesis, looked up defensively: a
    release without it has no harvest to switch off.
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - a Hypothesis release without the harvest
        yield
        return
    harvest = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if harvest is None or cache is None:  # pragma: no cover
        yield
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()  # permitted-value lists computed from the harvested pool
    try:
        yield
    finally:
        providers._get_local_constants = harvest
        cache.cache.clear()


def seeded(test: Test, seed: int, database: ExampleDatabase | None) -> Test:
    """``test`` (a Hypothesis test) generating from ``seed`` while still reading and writing ``database``.

    Hypothesis' ``@seed`` turns the example database off, so that a seeded run
    repeats exactly; a fleet of fuzz workers sharing one corpus needs both: the
    reuse phase replays the corpus first (a failure another worker found comes
    back within the first examples), then generation follows the seed. So the
    database is put back on the settings ``@seed`` replaced. The test runs
    :func:`without_local_constants`, so the seed alone decides what is generated.
    """
    test = hypothesis_seed(seed)(test)
    if database is not None:
        applied = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
        test._hypothesis_internal_use_settings = settings(applied, database=database)  # type: ignore[attr-defined]
    inner = test

    @functools.wraps(inner)
    def reproducible(*args: Any, **kwargs: Any) -> Any:
        with without_local_constants():
            return inner(*args, **kwargs)

    return reproducible  # type: ignore[return-value]


def run_machine(machine: type[RuleBasedStateMachine], *, examples: int, seed: int, step_count: int,
                database: ExampleDatabase | None, recorded: Callable[[], bool]) -> bool:
    """Run a fuzzer's state machine: ``examples`` examples of up to ``step_count`` steps from ``seed``, the corpus
    in ``database`` replayed first; returns whether Hypothesis found the failure flaky.

    The machine records its failure itself (``recorded()`` says whether it did); any other exception is a harness
    error and propagates. Quiet, no deadline, one failure per run: a campaign reports its own progress.
    """
    config = settings(max_examples=examples, stateful_step_count=step_count, deadline=None, database=database,
                      suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, print_blob=False,
                      report_multiple_bugs=False,
                      phases=[Phase.reuse, Phase.generate, Phase.shrink] if database is not None else
                      [Phase.generate, Phase.shrink])
    test = seeded(get_state_machine_test(machine, settings=config), seed, database)
    try:
        test()
    except Flaky:
        return True
    except Exception:
        if not recorded():
            raise
    return False


__all__ = ["DEFAULT_DIRECTORY", "open_database", "run_machine", "seeded", "without_local_constants"]
