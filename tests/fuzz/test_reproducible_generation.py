"""A seed names one campaign wherever it runs: what the fuzzers generate does not depend on the modules loaded.

Hypothesis mixes constants harvested from the loaded "local" modules into its draws (D-FUZZ-REPRO in
``sdcp_conformance/fuzz/database.py``); the fuzzers' ``seeded`` switches that off. The control shows the harvest
is real: the same plain ``@seed`` test generates other values once a module with new constants is imported.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdcp_conformance.fuzz.database import seeded

EXAMPLES = 1000


def _generated(wrap: Callable[[Callable[..., None]], Callable[[], None]]) -> list[int]:
    seen: list[int] = []

    @settings(max_examples=EXAMPLES, database=None, deadline=None)
    @given(st.integers(0, 2**40))
    def record(value: int) -> None:
        seen.append(value)

    wrap(record)()
    return seen


def _import_constants(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local module (outside site-packages and any tests folder) full of integer literals, imported."""
    module = folder / "sdcp_repro_constants.py"
    module.write_text("".join(f"C{k} = {7_000_003 * k + 11}\n" for k in range(200)), encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    importlib.import_module("sdcp_repro_constants")


@pytest.fixture
def elsewhere(tmp_path_factory: pytest.TempPathFactory,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    folder = tmp_path_factory.mktemp("lib", numbered=True)
    yield lambda: _import_constants(folder, monkeypatch)
    sys.modules.pop("sdcp_repro_constants", None)


def test_seeded_generation_is_the_same_after_another_module_is_imported(elsewhere: Callable[[], None]) -> None:
    before = _generated(lambda test: seeded(test, 5, None))
    plain_before = _generated(lambda test: hypothesis.seed(5)(test))
    elsewhere()
    assert _generated(lambda test: seeded(test, 5, None)) == before
    assert _generated(lambda test: hypothesis.seed(5)(test)) != plain_before, \
        "control: plain @seed no longer depends on the imported constants (is the harvest gone from Hypothesis?)"
