"""Without a system program the tests drive (Chromium, Node.js and npm, redis-server), only the tests that need
it fail, each with the Debian package to install; the rest of the suite is collected and runs, and none is
skipped. Checked by running pytest on a few such tests with an empty PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.system_binaries import install_hint

ROOT = Path(__file__).resolve().parents[1]
PYTEST_TIMEOUT_S = 300
NEEDING = {
    "chromium": "tests/report/test_html.py::test_the_console_error_check_itself_catches_a_broken_script",
    "node": "tests/testing/test_standin_node.py::test_the_node_standin_passes_the_cases_the_benchmark_drives",
    "redis-server": "tests/fuzz/test_shared_corpus.py::"
                    "test_a_failure_one_worker_finds_is_replayed_first_by_the_next_and_survives_a_restart",
}
NEEDING_NOTHING = "tests/packaging/test_dependencies.py::test_the_test_extra_installs_every_user_extra"


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", "-q", "-rA", *args],
                          cwd=ROOT, env={**os.environ, "PATH": str(empty)}, capture_output=True, text=True,
                          timeout=PYTEST_TIMEOUT_S, check=False)


def test_a_missing_program_fails_only_the_tests_that_need_it_with_its_install_hint(tmp_path: Path) -> None:
    done = _pytest(tmp_path, *NEEDING.values(), NEEDING_NOTHING)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    for program in NEEDING:
        assert install_hint(program) in output, (program, output[-4000:])
    assert "1 passed" in output and "skipped" not in output, output[-2000:]
    assert "Traceback" not in output, output[-4000:]


def test_the_suite_is_collected_without_them(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--collect-only", "tests/report", "tests/testing", "tests/fuzz")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "error" not in done.stdout.splitlines()[-1], done.stdout[-2000:]
