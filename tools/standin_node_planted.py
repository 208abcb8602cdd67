"""The bugs ``tools/standin_node_mutants.py`` plants in the Node.js stand-ins, by role: one edit of one line each.

Each entry names the stand-in's file, a text that must occur in it exactly once (so an edit of the stand-in that
moves it fails loudly), its replacement, the outcome a certification must reach, and why where the outcome is
not FAILED. The verifier's bugs were written against ``sdcp_conformance/testing/standin_node/``, the router's and
the drafter's against ``standin_node_router/`` and ``standin_node_drafter/``, by engineers who had not read the
reference implementations' mutants.
"""

from __future__ import annotations

from typing import NamedTuple


class Planted(NamedTuple):
    file: str
    line: str
    replacement: str
    expected: str
    why: str = ""


VERIFIER: dict[str, Planted] = {
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



ROUTER: dict[str, Planted] = {}

DRAFTER: dict[str, Planted] = {}

PLANTED: dict[str, dict[str, Planted]] = {"verifier": VERIFIER, "router": ROUTER, "drafter": DRAFTER}
