"""Plant bugs in the Node.js stand-in verifier and certify each: how the harness judges a verifier it did not write.

    python tools/standin_node_mutants.py                 # every planted bug (about 20 s each)
    python tools/standin_node_mutants.py reduce-ceil ... # some of them

The stand-in (``sdcp_conformance/testing/standin_node/``) is a verifier in JavaScript, written apart from the
reference; it passes every case it can serve (the ``bigram`` model). Each entry of :data:`PLANTED` changes one
line of a copy of it (the line must occur exactly once, so an edit of the stand-in that moves it fails loudly),
starts the copy and certifies it with every case the target's models allow. The tool prints the run's outcome
beside the one expected and exits 1 when any differs: a planted bug that a run no longer catches, or catches
for another reason, is a regression of the harness.

Outcomes: ``FAILED`` and ``INCOMPLETE`` (the sanity case failed, P1-JUDGE-3); ``NON-STRICT`` for a bug that
breaks only a profile decision (the run passes, the report says NON-STRICT, P1-JUDGE-1); ``PASSED`` for an edit
that is conformant or cannot be observed, each saying why.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from sdcp_conformance.harness.certify import cases_needing, default_catalogue
from sdcp_conformance.harness.cli import write_iut_target
from sdcp_conformance.harness.target import load_target, render_target
from sdcp_conformance.testing import standin_node

READY_TIMEOUT_S = 300.0
"""The first start installs the stand-in's npm packages."""
CERTIFY_TIMEOUT_S = 900.0
STOP_TIMEOUT_S = 10.0


class Planted(NamedTuple):
    file: str
    line: str
    replacement: str
    expected: str
    why: str = ""


PLANTED: dict[str, Planted] = {
    # rule 2 (§6.4)
    "residual-from-p": Planted(
        "protocol.js",
        "const extra = draw(mass > 0 ? rest : pRows[i], uniform(i + 1, PURPOSE_DRAW));",
        "const extra = draw(pRows[i], uniform(i + 1, PURPOSE_DRAW));",
        "FAILED",
    ),
    "bonus-from-q": Planted(
        "protocol.js",
        "emitted: [...tokens, draw(pRows[m], uniform(m + 1, PURPOSE_DRAW))] };",
        "emitted: [...tokens, draw(qRows[m - 1], uniform(m + 1, PURPOSE_DRAW))] };",
        "FAILED",
    ),
    "purposes-swapped": Planted(
        "protocol.js",
        "const PURPOSE_ACCEPT = 0;\nconst PURPOSE_DRAW = 1;",
        "const PURPOSE_ACCEPT = 1;\nconst PURPOSE_DRAW = 0;",
        "FAILED",
    ),
    "draw-index-i": Planted(
        "protocol.js",
        "const extra = draw(mass > 0 ? rest : pRows[i], uniform(i + 1, PURPOSE_DRAW));",
        "const extra = draw(mass > 0 ? rest : pRows[i], uniform(i, PURPOSE_DRAW));",
        "NON-STRICT",
        "P1-SAMP-3 alone sets the draw's i; the law is unchanged",
    ),
    "draw-at-or-below": Planted(
        "protocol.js",
        "if (u < cumulative[k] / running) return k;",
        "if (u <= cumulative[k] / running) return k;",
        "PASSED",
        "differs only when u equals a cumulative sum exactly: never seen",
    ),
    "seeded-when-unseeded": Planted(
        "server.js",
        "return seed === undefined ? P.systemUniforms() : P.seededUniforms(seed, session.session, round);",
        "return P.seededUniforms(seed === undefined ? 7 : seed, Buffer.from('x'), round);",
        "FAILED",
    ),
    "q-zero-accepted": Planted(
        "protocol.js", "if (!(tokens[i] < v) || row[tokens[i]] <= 0) throw", "if (!(tokens[i] < v)) throw", "FAILED"
    ),
    "q-rows-longer-accepted": Planted(
        "protocol.js",
        "if (blob.length !== m * v * 4) {",
        "if (blob.length < m * v * 4) {",
        "NON-STRICT",
        "P1-Q-1 alone fixes the size of q_rows",
    ),
    # the target's distribution (§4.1, P1-SAMP-1)
    "temperature-multiplied": Planted(
        "protocol.js",
        "const scores = Float64Array.from(logits, (x) => x / t);",
        "const scores = Float64Array.from(logits, (x) => x * t);",
        "FAILED",
    ),
    "top-k-ties-largest-ids": Planted(
        "protocol.js",
        "for (let id = 0; id < v; id += 1) {\n      if (scores[id] > kth) continue;",
        "for (let id = v - 1; id >= 0; id -= 1) {\n      if (scores[id] > kth) continue;",
        "FAILED",
    ),
    "top-p-strictly-above": Planted(
        "protocol.js",
        "if (mass >= topP / 1000) { length = n + 1; break; }",
        "if (mass > topP / 1000) { length = n + 1; break; }",
        "PASSED",
        "differs only when a float sum equals top_p exactly: never seen",
    ),
    "greedy-ties-largest-id": Planted(
        "protocol.js", "if (row[k] > row[best]) best = k;", "if (row[k] >= row[best]) best = k;", "INCOMPLETE"
    ),
    # rule 1, truncation, the digest chain
    "rule1-extra-token": Planted(
        "protocol.js",
        "while (accepted < tokens.length && tokens[accepted] === greedy(pRows[accepted])) accepted += 1;",
        "while (accepted < tokens.length && tokens[accepted] === greedy(pRows[accepted])) accepted += 1;\n"
        "  if (accepted < tokens.length && accepted > 0 && tokens.length > 2) accepted += 1;",
        "FAILED",
    ),
    "no-stop-truncation": Planted(
        "protocol.js",
        "  if (first >= 0) kept = kept.slice(0, first + 1);\n",
        "  if (first > 100) kept = kept.slice(0, first + 1);\n",
        "FAILED",
    ),
    "max-new-off-by-one": Planted(
        "protocol.js",
        "kept = kept.slice(0, Math.max(0, maxNew - committed));",
        "kept = kept.slice(0, Math.max(0, maxNew + 1 - committed));",
        "FAILED",
    ),
    "accepted-after-truncation": Planted(
        "session.js",
        "accepted: outcome.accepted, emitted: kept,",
        "accepted: Math.min(outcome.accepted, kept.length), emitted: kept,",
        "NON-STRICT",
        "P1-CTL-5 alone says accepted is counted before truncation",
    ),
    "digest-chain-drops-last": Planted(
        "protocol.js",
        "for (const token of tokens) current = sha256(current, u32(token));",
        "for (const token of tokens.slice(0, Math.max(1, tokens.length - 1))) current = sha256(current, u32(token));",
        "INCOMPLETE",
    ),
    "record-committed-off": Planted(
        "session.js",
        "return { epoch: this.epoch, round, emitted, committed: this.output.length + emitted.length,",
        "return { epoch: this.epoch, round, emitted, "
        "committed: this.output.length + emitted.length + (round > 2 ? 1 : 0),",
        "FAILED",
    ),
    # contract (§4.1)
    "m-max-unbounded": Planted(
        "protocol.js",
        "m_max: [(v, p) => uint(v, p, { le: 64 }), true],",
        "m_max: [(v, p) => uint(v, p), true],",
        "FAILED",
    ),
    "unknown-contract-key": Planted(
        "protocol.js",
        "    }, path, true);\n  } catch (error) {\n    if (error instanceof FieldError)",
        "    }, path, false);\n  } catch (error) {\n    if (error instanceof FieldError)",
        "FAILED",
    ),
    # proposals: authorization, fencing, stale bases, idempotency (§6.3)
    "any-drafter": Planted(
        "session.js",
        "if (this.drafter === null || peer !== this.drafter || proposal.drafter !== this.drafter) {",
        "if (this.drafter === null) {",
        "FAILED",
    ),
    "older-epoch-accepted": Planted(
        "session.js", "if (epoch !== this.epoch) throw", "if (epoch > this.epoch) throw", "FAILED"
    ),
    "base-digest-unchecked": Planted(
        "session.js",
        "if (proposal.base !== this.output.length || !proposal.base_digest.equals(this.digest)) {",
        "if (proposal.base !== this.output.length) {",
        "FAILED",
    ),
    "stale-base-typed-stale-epoch": Planted(
        "session.js",
        "return new P.ProtocolError('staleBase', detail, this.state());",
        "return new P.ProtocolError('staleEpoch', detail, this.state());",
        "FAILED",
    ),
    "no-stored-verdicts": Planted(
        "session.js",
        "    if (stored) return { stored };\n",
        "    if (stored && Math.random() < 0) return { stored };\n",
        "FAILED",
    ),
    "assignment-after-close": Planted(
        "session.js",
        "    this.requireEpoch(assignment.epoch);\n    this.requireOpen();",
        "    this.requireEpoch(assignment.epoch);",
        "NON-STRICT",
        "P1-CTL-3 alone refuses a drafter change after the end",
    ),
    # the commit log (§6.3 Commit, §6.8)
    "verdict-before-append": Planted(
        "server.js",
        "    await this.commit(slot, pending, ticket, log);\n    return ok(pending.verdict);",
        "    this.commit(slot, pending, ticket, log).catch(() => {});\n    return ok(pending.verdict);",
        "FAILED",
    ),
    "no-read-back": Planted(
        "links.js",
        "return preceding !== null && record.epoch < preceding ? 'fenced' : 'appended';",
        "return 'appended';",
        "FAILED",
    ),
    "no-fence-check-before-append": Planted(
        "links.js",
        "    if (fence !== null && record.epoch < fence) return 'fenced';\n",
        "",
        "PASSED",
        "conformant: the read-back of §6.8 still finds the fence",
    ),
    # speculation control and escalation (§6.5)
    "m-cap-above-m-max": Planted(
        "protocol.js",
        "else if (!low) this.mCap = Math.min(this.ceiling, this.mCap + 1);",
        "else if (!low) this.mCap = this.mCap + 1;",
        "FAILED",
    ),
    "restore-past-m-init": Planted(
        "protocol.js",
        "this.mCap = this.ceiling = Math.min(this.contract.m_max, mInit);",
        "this.mCap = Math.min(this.contract.m_max, mInit); this.ceiling = this.contract.m_max;",
        "NON-STRICT",
        "P1-CTL-4 alone caps the restore at m_init",
    ),
    "reduce-rounds-up": Planted(
        "protocol.js",
        "this.mCap = Math.max(1, Math.floor(this.mCap / 2));",
        "this.mCap = Math.max(1, Math.ceil(this.mCap / 2));",
        "FAILED",
    ),
    "low-ratio-at-or-below": Planted(
        "protocol.js",
        "const low = ratio ? 100 * accepted < ratio * proposed : accepted === 0;",
        "const low = ratio ? 100 * accepted <= ratio * proposed : accepted === 0;",
        "FAILED",
    ),
    "low-reported-before-reset": Planted(
        "protocol.js",
        "return { action, mCap: this.mCap, low: this.c };",
        "return { action, mCap: this.mCap, low: action === ACTION.continue ? this.c : this.contract.low_rounds };",
        "FAILED",
    ),
    "j-never-reset": Planted("protocol.js", "if (this.g >= this.contract.low_rounds) this.j = 0;", "", "FAILED"),
    "j-reset-on-switch": Planted(
        "session.js",
        "case P.ACTION.switch: this.drafter = null; return [this.event(P.ACTION.switch)];",
        "case P.ACTION.switch: this.drafter = null; this.control.j = 0; return [this.event(P.ACTION.switch)];",
        "FAILED",
    ),
    "switch-event-kind-1": Planted(
        "session.js",
        "case P.ACTION.switch: this.drafter = null; return [this.event(P.ACTION.switch)];",
        "case P.ACTION.switch: this.drafter = null; return [this.event(P.ACTION.reduce)];",
        "FAILED",
    ),
    "event-committed-stale": Planted(
        "session.js",
        "kind, committed: this.output.length, digest: this.digest };",
        "kind, committed: Math.max(0, this.output.length - 1), digest: this.digest };",
        "FAILED",
    ),
    "self-max-ignored": Planted(
        "session.js",
        "const budget = this.contract.self_max === undefined || this.selfDecodedInPeriod < this.contract.self_max;",
        "const budget = true;",
        "FAILED",
    ),
    "self-decode-purpose-0": Planted(
        "session.js",
        "P.draw(p, uniform(1, P.PURPOSE_DRAW))",
        "P.draw(p, uniform(1, 0))",
        "NON-STRICT",
        "P1-SAMP-3 alone sets the self-decoded draw's purpose",
    ),
    "self-decoding-state-0": Planted(
        "session.js",
        "digest: this.digest, state: this.phase };",
        "digest: this.digest, state: this.phase === PHASE.selfDecoding ? 0 : this.phase };",
        "NON-STRICT",
        "P1-STATE-1 alone numbers the states",
    ),
    # policy (§6.6), output (§6.7)
    "policy-a-round-late": Planted(
        "session.js",
        "if (policy.from_round <= round) sampling = policy.sampling;",
        "if (policy.from_round < round) sampling = policy.sampling;",
        "FAILED",
    ),
    "output-from-off-by-one": Planted(
        "session.js",
        "const tokens = this.output.slice(start);",
        "const tokens = this.output.slice(start + (start > 0 ? 1 : 0));",
        "FAILED",
    ),
    "final-without-finish": Planted(
        "session.js",
        "    if (this.closed) out.finish = this.phase === PHASE.finished ? P.ACTION.finish : P.ACTION.fail;\n",
        "",
        "FAILED",
    ),
}


def outcome(report: dict[str, object]) -> str:
    run = report["run"]
    assert isinstance(run, dict)
    if run["status"] != "PASSED":
        return str(run["status"])
    counts = report["counts"]
    assert isinstance(counts, dict)
    return "NON-STRICT" if counts.get("NON-STRICT") else "PASSED"


def _target(folder: Path) -> tuple[Path, list[str]]:
    """A verifier target serving ``bigram`` only (all the stand-in serves), and the cases it must leave out."""
    _, path = write_iut_target(folder)
    target = dataclasses.replace(load_target(path), models=("bigram",))
    path.write_text(render_target(target, folder), encoding="utf-8")
    catalogue = default_catalogue()
    needing = cases_needing(catalogue, catalogue.select([]))
    return path, sorted(case for model, cases in needing.items() if model != "bigram" for case in cases)


def _start(folder: Path, path: Path, log: Path) -> subprocess.Popen[str]:
    target = load_target(path)
    config = standin_node.configuration(target.pki, "verifier", target.router, host="127.0.0.1", pinned_load=None)
    environment = {**os.environ, standin_node.CONFIG_ENV: json.dumps(config)}
    process = subprocess.Popen(
        [standin_node.node_binary(), str(folder / "server.js")],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], READY_TIMEOUT_S)
    line = process.stdout.readline() if ready else ""
    if not line.startswith("serving"):
        process.kill()
        raise SystemExit(f"the planted copy did not start (see {log}): {line!r}")
    return process


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def plant(name: str, planted: Planted, into: Path) -> None:
    shutil.copytree(standin_node.installed(), into, symlinks=True)
    source = into / planted.file
    text = source.read_text(encoding="utf-8")
    if text.count(planted.line) != 1:
        raise SystemExit(
            f"{name}: the line to change occurs {text.count(planted.line)} times in {planted.file} "
            f"(the stand-in changed: update PLANTED)"
        )
    source.write_text(text.replace(planted.line, planted.replacement), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"planted bugs to try (default: all {len(PLANTED)})")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep the reports and logs in this folder")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(PLANTED))
    if unknown:
        parser.error(f"unknown planted bug(s) {unknown}; known: {', '.join(PLANTED)}")
    with tempfile.TemporaryDirectory(prefix="standin-mutants-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        path, excluded = _target(work / "pki")
        differing = []
        for name in args.names or list(PLANTED):
            planted = PLANTED[name]
            copy = work / f"standin-{name}"
            shutil.rmtree(copy, ignore_errors=True)
            plant(name, planted, copy)
            reports = work / f"reports-{name}"
            shutil.rmtree(reports, ignore_errors=True)
            started = time.monotonic()
            process = _start(copy, path, work / f"{name}.log")
            try:
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "sdcp_conformance.cli",
                        "certify",
                        "--target",
                        str(path),
                        "--seed",
                        str(args.seed),
                        "--report-dir",
                        str(reports),
                        *(f"--exclude={case}" for case in excluded),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=CERTIFY_TIMEOUT_S,
                )
            finally:
                _stop(process)
            report_file = reports / "report.json"
            got = (
                outcome(json.loads(report_file.read_text()))
                if report_file.exists()
                else f"no report (exit {done.returncode})"
            )
            mark = "ok  " if got == planted.expected else "DIFF"
            if got != planted.expected:
                differing.append(name)
            print(
                f"{mark} {name:30s} {got:11s} expected {planted.expected:11s} {time.monotonic() - started:5.1f} s"
                + (f"  ({planted.why})" if planted.why else ""),
                flush=True,
            )
            shutil.rmtree(copy, ignore_errors=True)
    print(
        f"{len(args.names or PLANTED) - len(differing)} as expected"
        + (f"; differing: {', '.join(differing)}" if differing else "")
    )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
