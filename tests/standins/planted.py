"""The bugs ``python -m tests.standins.mutants`` plants in the Node.js stand-ins, by role: one edit of one line each.

Each entry names the stand-in's file (``../node_common/…`` for the modules the three share, which each stand-in's
installed copy holds as its ``node_common/``: a bug planted there is the one stand-in's), a text that must occur
in it exactly once (so an edit of the stand-in that moves it fails loudly), its replacement, the outcome a
certification must reach, and why where the outcome is not FAILED. The verifier's bugs were written against
``tests/standins/standin_node/``, the router's and the drafter's against ``standin_node_router/`` and
``standin_node_drafter/``, by engineers who had not read the reference implementations' mutants.
"""

from __future__ import annotations

from typing import NamedTuple


class Planted(NamedTuple):
    file: str
    line: str
    replacement: str
    expected: str
    """The outcome, or outcomes separated by "|" where the interleaving of concurrent cases decides (said in why)."""
    why: str = ""
    row: str = ""
    """Where the status alone would not show the cause: the row the failed cases' findings must be on."""


OUTBOUND_TLS12_ONLY = Planted(
    "../node_common/links.js",
    "session = http2.connect(origin, { ...this.tls, minVersion: 'TLSv1.3' });",
    "session = http2.connect(origin, { ...this.tls, maxVersion: 'TLSv1.2' });",
    "INCOMPLETE",
    "the sanity case fails: nothing reaches the harness",
    "R-5.1-MTLS-CLIENT",
)
"""The router's and the drafter's connections (the shared node_common/links.js) offer TLS 1.2 at most."""

VERIFIER: dict[str, Planted] = {
    # transport as a client (§5.1): judged on R-5.1-MTLS-CLIENT, D-JUDGE-REFUSED-CLIENT
    "mlc-without-client-certificate": Planted(
        "../node_common/links.js",
        "session = http2.connect(origin, { ...this.tls, minVersion: 'TLSv1.3' });",
        "session = http2.connect(origin, { ca: this.tls.ca, minVersion: 'TLSv1.3' });",
        "INCOMPLETE",
        "the sanity case fails: no q_rows GET reaches the harness's MLC",
        "R-5.1-MTLS-CLIENT",
    ),
    # status reports (§6.1, §5.2, P1-RTR-1): a verifier is an instance too
    "status-role-drafter": Planted(
        "server.js",
        "const status = { instance: this.config.base_uri, role: 2, load: this.load(),",
        "const status = { instance: this.config.base_uri, role: 1, load: this.load(),",
        "FAILED",
        row="R-5.2-STATUS-REPORT",
    ),
    "status-every-two-ttl": Planted(
        "server.js",
        "const status = setInterval(() => verifier.reportStatus(), config.status_ttl_ms / 3);",
        "const status = setInterval(() => verifier.reportStatus(), config.status_ttl_ms * 2);",
        "FAILED",
        row="R-6.1-STATUS-INTERVAL",
    ),
    "status-id-hex": Planted(
        "server.js",
        "const id = Buffer.from(this.config.base_uri).toString('base64url');",
        "const id = Buffer.from(this.config.base_uri).toString('hex');",
        "NON-STRICT",
        "P1-RTR-1 alone says the {id} is base64url without padding (base64 with padding would often pass: the "
        "stand-in's URI is 33 octets with a five-digit port, which base64 and base64url write alike)",
    ),
    # batch of 2026-12-06
    "commit-log-blind-put": Planted(
        "links.js",
        "const headers = before.etag === null ? { 'if-none-match': '*' } : { 'if-match': before.etag };",
        "const headers = {};",
        "FAILED",
    ),
    "commit-log-overwritten": Planted(
        "links.js",
        "const reply = await origins.request('PUT', uri, Buffer.concat([before.data, encoded]), headers);",
        "const reply = await origins.request('PUT', uri, encoded, headers);",
        "FAILED",
    ),
    "output-epoch-one": Planted(
        "session.js",
        "const out = { session: this.session, epoch: this.epoch, from: start, tokens, final: this.closed };",
        "const out = { session: this.session, epoch: 1, from: start, tokens, final: this.closed };",
        "FAILED",
    ),
    "verdict-round-previous": Planted(
        "session.js",
        "accepted: outcome.accepted, emitted: kept, committed: record.committed, digest: record.digest,",
        "accepted: outcome.accepted, emitted: kept, committed: record.committed, digest: record.digest, round: this.round,",
        "INCOMPLETE",
        "the sanity case's first verdict names round 0: \"the verdict is for round 0, not 1\" (R-6.3-COMMIT)",
    ),
    "assignment-leaves-self-decoding-on": Planted(
        "session.js",
        "if (this.phase === PHASE.selfDecoding) this.phase = PHASE.active; // the router's choice wins",
        "// self-decoding goes on whatever the router assigns",
        "NON-STRICT",
        "no sentence says what an assignment received during self-decoding does (§6.5.2 has the verifier end the "
        "period and ask for a drafter): the harness's decision D-JUDGE-ASSIGN-SELF, on P1-EVT-1's \"until a new "
        "assignment arrives\", has it end the period, so NON-STRICT",
    ),
    "self-decode-budget-not-reset": Planted(
        "session.js",
        "        this.selfDecodedInPeriod = 0;\n",
        "",
        "FAILED",
    ),
    "stale-base-without-state": Planted(
        "../node_common/protocol.js",
        "    members.state = state; // P1-ERR-2",
        "    void state; // the state is built, then forgotten",
        "FAILED",
    ),
    "events-never-posted": Planted(
        "server.js",
        "for (const event of events) this.postEvent(event);",
        "for (const event of events) void event;",
        "FAILED",
    ),
    "assignment-body-session-unchecked": Planted(
        "server.js",
        "if (!assignment.session.equals(slot.session.session)) throw",
        "if (false) throw",
        "NON-STRICT",
        "no sentence has a verifier refuse a PUT …/drafter whose body names another session than its path: refused "
        "by the harness's decision D-JUDGE-PATH-BODY (P1-MSG-3's {id} is the session), so NON-STRICT",
    ),
    "output-final-while-self-decoding": Planted(
        "session.js",
        "const out = { session: this.session, epoch: this.epoch, from: start, tokens, final: this.closed };",
        "const out = { session: this.session, epoch: this.epoch, from: start, tokens, final: this.closed || this.phase === PHASE.selfDecoding };",
        "FAILED",
    ),
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
        "../node_common/protocol.js",
        "if (mass >= topP / 1000) { length = n + 1; break; }",
        "if (mass > topP / 1000) { length = n + 1; break; }",
        "PASSED",
        "differs only when a float sum equals top_p exactly: never seen",
    ),
    "greedy-ties-largest-id": Planted(
        "../node_common/protocol.js", "if (row[k] > row[best]) best = k;", "if (row[k] >= row[best]) best = k;", "INCOMPLETE"
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
        "../node_common/protocol.js",
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
        "../node_common/protocol.js",
        "m_max: [(v, p) => uint(v, p, { le: 64 }), true],",
        "m_max: [(v, p) => uint(v, p), true],",
        "FAILED",
    ),
    "unknown-contract-key": Planted(
        "../node_common/protocol.js",
        "    return checked(value, CONTRACT, path, true);",
        "    return checked(value, CONTRACT, path, false);",
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
    "absent-temperature-greedy-under-rule2": Planted(
        "protocol.js",
        "const milli = profile && profile.temperature_milli !== undefined ? profile.temperature_milli : (rule === 1 ? 0 : 1000);",
        "const milli = profile && profile.temperature_milli !== undefined ? profile.temperature_milli : 0;",
        "NON-STRICT",
        "P1-NUM-1 alone says an absent temperature under rule 2 is 1.0 (the draft leaves it open)",
    ),
    "policy-merged-into-profile": Planted(
        "session.js",
        "if (policy.from_round <= round) sampling = policy.sampling;",
        "if (policy.from_round <= round) sampling = { ...sampling, ...policy.sampling };",
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
    # second batch: counters, order of the steps, refusal types, derivations, judging of SHOULDs
    "g-kept-on-low": Planted(
        "protocol.js",
        "      this.c += 1;\n      this.g = 0;\n",
        "      this.c += 1;\n",
        "FAILED",
    ),
    "escalate-after-R-plus-1": Planted(
        "protocol.js",
        "if (this.c >= this.contract.low_rounds) {",
        "if (this.c > this.contract.low_rounds) {",
        "FAILED",
    ),
    "epoch-before-authorization": Planted(
        "session.js",
        "    if (this.drafter === null || peer !== this.drafter || proposal.drafter !== this.drafter) {\n"
        "      throw new P.ProtocolError('notAssigned', `${peer} is not the drafter assigned to the session`);\n"
        "    }\n    this.requireServing();\n    this.requireEpoch(proposal.epoch);\n",
        "    this.requireServing();\n    this.requireEpoch(proposal.epoch);\n"
        "    if (this.drafter === null || peer !== this.drafter || proposal.drafter !== this.drafter) {\n"
        "      throw new P.ProtocolError('notAssigned', `${peer} is not the drafter assigned to the session`);\n"
        "    }\n",
        "FAILED",
    ),
    "q-fetch-failure-bad-proposal": Planted(
        "server.js",
        "throw new P.ProtocolError('qUnavailable', `cannot read ${ticket.proposal.q_rows}: ${error.message}`);",
        "throw new P.ProtocolError('badProposal', `cannot read ${ticket.proposal.q_rows}: ${error.message}`);",
        "FAILED",
    ),
    "wrong-round-without-state": Planted(
        "session.js",
        "if (proposal.round !== this.round + 1) throw this.staleBase(",
        "if (proposal.round !== this.round + 1) throw new P.ProtocolError('staleBase', ",
        "FAILED",
    ),
    "restore-after-low-round": Planted(
        "protocol.js",
        "else if (!low) this.mCap = Math.min(this.ceiling, this.mCap + 1);",
        "else this.mCap = Math.min(this.ceiling, this.mCap + 1);",
        "NON-STRICT",
        "§6.5.1's restore is a SHOULD; P1-CTL-4 alone restores only on rounds that are not low",
    ),
    "tokenizer-unchecked": Planted(
        "server.js",
        "    if (contract.tokenizer.toString('hex') !== model.tokenizer) throw new P.ProtocolError('badContract', "
        "\"the contract's tokenizer is not this verifier's\");\n",
        "",
        "NON-STRICT",
        "P1-SES-1 alone (a SHOULD) refuses another tokenizer; §6.1 names only the target",
    ),
    "hmac-low-53-bits": Planted(
        "protocol.js",
        "return Number(mac.readBigUInt64BE(0) >> 11n) / TWO_53;",
        "return Number(mac.readBigUInt64BE(0) & (2n ** 53n - 1n)) / TWO_53;",
        "FAILED",
    ),
    "switch-keeps-drafter": Planted(
        "session.js",
        "case P.ACTION.switch: this.drafter = null; return [this.event(P.ACTION.switch)];",
        "case P.ACTION.switch: return [this.event(P.ACTION.switch)];",
        "NON-STRICT",
        "the latest assignment still names the drafter (§6.3 step 1); P1-EVT-1 alone refuses it after switch",
    ),
    "self-decoded-rounds-reset-j": Planted(
        "session.js",
        "      this.selfDecodedInPeriod += 1;\n",
        "      this.selfDecodedInPeriod += 1;\n"
        "      this.control.g += 1; if (this.control.g >= this.contract.low_rounds) this.control.j = 0;\n",
        "FAILED",
    ),
    # limits and vocabulary at their boundaries (§6.2, §6.3)
    "m-over-limit-by-one-accepted": Planted(
        "session.js", "if (m > limit) throw new P.ProtocolError('limit',", "if (m > limit + 1) throw new P.ProtocolError('limit',",
        "FAILED",
    ),
    "token-equal-to-vocab-accepted": Planted(
        "session.js", "if (proposal.tokens.some((token) => token >= this.vocab)) {",
        "if (proposal.tokens.some((token) => token > this.vocab)) {", "NON-STRICT",
        "under rule 1 token V gets 500 (P1-MSG-2 alone makes it an out-of-range value, D-JUDGE-VOCAB) and is never "
        "committed; under rule 2 the q-row check still refuses it",
    ),
    "prompt-token-equal-to-vocab-accepted": Planted(
        "session.js", "prompt.some((token) => token >= vocab)", "prompt.some((token) => token > vocab)", "NON-STRICT",
        "P1-MSG-2 alone makes a prompt token >= V an out-of-range value (D-JUDGE-VOCAB)",
    ),
    "empty-prompt-accepted": Planted(
        "session.js", "if (!prompt.length || prompt.some(", "if (prompt.some(", "NON-STRICT", "P1-SES-1 alone makes an empty prompt 400",
    ),
    # sessions, epochs and policies (P1-SES-1, P1-MSG-5, P1-POL-1)
    "higher-epoch-without-resume-accepted": Planted(
        "server.js", "if (!(opening.epoch > current.epoch && opening.resume)) {", "if (!(opening.epoch > current.epoch)) {",
        "NON-STRICT", "P1-SES-1 alone makes a higher epoch without resume 409",
    ),
    "same-epoch-other-contract-accepted": Planted(
        "server.js", "if (!P.contractDigest(contract).equals(current.contractDigest)) throw", "if (false) throw",
        "NON-STRICT", "P1-MSG-5 alone says what a repeated session-open with another contract gets",
    ),
    "unknown-session-proposal-404": Planted(
        "server.js", "if (!slot) throw new P.ProtocolError('notAssigned', 'unknown session'); // P1-SES-1",
        "if (!slot) throw new P.HttpError(404, 'unknown session'); // P1-SES-1",
        "NON-STRICT", "P1-SES-1 alone gives proposals for an unknown session 403",
    ),
    "unknown-session-resource-403": Planted(
        "server.js", "if (!slot) throw new P.HttpError(404, `no session ${encoded}`);",
        "if (!slot) throw new P.ProtocolError('notAssigned', `no session ${encoded}`);",
        "NON-STRICT", "P1-SES-1 alone gives session resources of an unknown session 404",
    ),
    "policy-at-current-round-accepted": Planted(
        "session.js", "if (policy.from_round <= this.round) {", "if (policy.from_round < this.round) {",
        "NON-STRICT", "P1-POL-1 alone refuses a policy whose from_round is not above the current round",
    ),
    "resume-round-ignored": Planted(
        "session.js", "this.round = opening.resume ? opening.resume.round : 0;", "this.round = 0;", "FAILED",
    ),
    "resume-unchecked": Planted(
        "session.js", "if (opening.resume && (opening.resume.committed !== this.output.length",
        "if (false && (opening.resume.committed !== this.output.length", "NON-STRICT",
        "the draft does not say how a verifier treats a resume its committed_tokens do not reproduce (D-JUDGE-2)",
    ),
    "m-cap-from-first-assignment-only": Planted(
        "session.js", "    this.control.onAssignment(assignment.m_init);\n",
        "    if (this.control.mCap === null) this.control.onAssignment(assignment.m_init);\n", "NON-STRICT",
        "P1-CTL-1 alone makes the latest assignment's m_init the limit until that assignment's first verdict",
    ),
    # encoding and digests (§4.2, P1-MSG-1)
    "contract-keys-lexicographic": Planted(
        "../node_common/protocol.js",
        "keys.sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));",
        "keys.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));", "INCOMPLETE",
        "d[0] over a contract encoded with lexicographic keys is not the harness's: the sanity case fails",
    ),
    # self-decoding and output (§6.5.2, §6.7, P1-OUT-1)
    "self-decode-greedy-under-rule2": Planted(
        "session.js", "const token = this.contract.rule === 2 ? P.draw(p, uniform(1, P.PURPOSE_DRAW)) : P.greedy(p);",
        "const token = P.greedy(p);", "FAILED",
    ),
    "fenced-output-served": Planted(
        "session.js", "    this.requireServing();\n    const tokens = this.output.slice(start);", "    const tokens = this.output.slice(start);",
        "FAILED",
    ),
    "output-answers-at-once": Planted(
        "session.js", "    if (!tokens.length && !this.closed) return null;\n", "", "PASSED",
        "P1-OUT-1 lets the server choose how long a read waits, zero included",
    ),
    # batch of 2026-12-07 (a red team; two passed the harness then: identity-includes-status, policy-sampling-closed)
    "contract-digest-without-sampling": Planted(
        "../node_common/protocol.js",
        "return sha256(Buffer.from('SDCP-CONTRACT-1\\0'), encode(contract));",
        "return sha256(Buffer.from('SDCP-CONTRACT-1\\0'), encode({ ...contract, sampling: undefined }));",
        "FAILED",
        row="R-4.1-DIGEST",
    ),
    "stop-token-not-emitted": Planted(
        "protocol.js",
        "kept = kept.slice(0, first + 1);",
        "kept = kept.slice(0, first);",
        "FAILED",
        row="R-6.3-TRUNCATE",
    ),
    "max-new-never-finishes": Planted(
        "protocol.js",
        "|| committed + kept.length === maxNew;",
        "|| committed + kept.length > maxNew;",
        "FAILED",
    ),
    "rule2-bonus-from-last-proposed-row": Planted(
        "protocol.js",
        "emitted: [...tokens, draw(pRows[m], uniform(m + 1, PURPOSE_DRAW))] };",
        "emitted: [...tokens, draw(pRows[m - 1], uniform(m + 1, PURPOSE_DRAW))] };",
        "FAILED",
        row="R-6.4-RULE2",
    ),
    "q-zero-checked-at-first-position-only": Planted(
        "protocol.js",
        "if (!(tokens[i] < v) || row[tokens[i]] <= 0) throw",
        "if (!(tokens[i] < v) || (i === 0 && row[tokens[i]] <= 0)) throw",
        "FAILED",
        row="R-6.4-ZERO-Q",
    ),
    "stored-verdict-refreshed": Planted(
        "session.js",
        "if (stored) return { stored };",
        "if (stored) return { stored: { ...stored, committed: this.output.length, digest: this.digest } };",
        "FAILED",
        row="R-6.3-IDEMPOTENCY",
    ),
    "identity-includes-status": Planted(
        "server.js",
        "const identity = P.encode(members).toString('hex');",
        "const identity = P.encode(proposal).toString('hex');",
        "NON-STRICT",
        "§6.3 says only \"if the round is being verified for an identical earlier request, wait for that verdict\": a "
        "retry whose status differs is not byte-identical; P1-IDEM-1 alone makes \"identical\" ignore status, so the "
        "in-flight retry refused with 409 sdcp-stale-base deviates from the profile only",
        "P1-IDEM-1/IDENTICAL",
    ),
    "stale-epoch-typed-stale-base": Planted(
        "session.js",
        "if (epoch !== this.epoch) throw new P.ProtocolError('staleEpoch', `epoch ${epoch} is not ${this.epoch}`);",
        "if (epoch !== this.epoch) throw this.staleBase(`epoch ${epoch} is not ${this.epoch}`);",
        "FAILED",
        row="R-6.3-FENCING",
    ),
    "limit-status-400": Planted(
        "../node_common/protocol.js",
        "limit: ['sdcp-limit', 422],",
        "limit: ['sdcp-limit', 400],",
        "FAILED",
        row="R-6.2-LIMIT",
    ),
    "reduce-halves-proposed-m": Planted(
        "protocol.js",
        "Math.floor(this.mCap / 2)",
        "Math.floor(proposed / 2)",
        "FAILED",
        row="R-6.5.2-REDUCE",
    ),
    "c-not-reset-after-escalation": Planted(
        "protocol.js",
        "      this.c = 0;\n      action = ACTION.fail;",
        "      action = ACTION.fail;",
        "FAILED",
        row="R-6.5.2-ESCALATE",
    ),
    "j-reset-one-round-late": Planted(
        "protocol.js",
        "if (this.g >= this.contract.low_rounds) this.j = 0;",
        "if (this.g > this.contract.low_rounds) this.j = 0;",
        "FAILED",
        row="R-6.5.2-J-RESET",
    ),
    "self-decode-without-self-load": Planted(
        "protocol.js",
        "return this.contract.self_load !== undefined && load <= this.contract.self_load;",
        "return load <= (this.contract.self_load ?? 100);",
        "FAILED",
        row="R-6.5.2-SELF-PERMITTED",
    ),
    "fence-of-own-epoch-fences": Planted(
        "links.js",
        "if (fence !== null && record.epoch < fence) return 'fenced';",
        "if (fence !== null && record.epoch <= fence) return 'fenced';",
        "FAILED",
        row="R-6.9-RESUME",
    ),
    "policy-sampling-closed": Planted(
        "protocol.js",
        "sampling: [(v, p) => sampling(v, p), true],",
        "sampling: [(v, p) => sampling(v, p, true), true],",
        "FAILED",
        row="R-5.2-UNKNOWN-KEYS",
    ),
    # batch of 2026-12-07, second red team
    "output-timeout-from-zero": Planted(
        "server.js",
        "return ok({ session: session.session, epoch: session.epoch, from: start, tokens: [], final: false }); // P1-OUT-1",
        "return ok({ session: session.session, epoch: session.epoch, from: 0, tokens: [], final: false }); // P1-OUT-1",
        "FAILED",
        row="R-6.7-DELIVERY",
    ),
    "finish-continue-on-open-output": Planted(
        "session.js",
        "    if (this.closed) out.finish = this.phase === PHASE.finished ? P.ACTION.finish : P.ACTION.fail;\n",
        "    out.finish = this.closed ? (this.phase === PHASE.finished ? P.ACTION.finish : P.ACTION.fail) : P.ACTION.continue;\n",
        "PASSED",
        "conformant: §5.2 makes finish optional (\"? finish: action\") and §6.7 constrains it only on the final "
        "message (\"The final output message has final set to true and finish set to \\\"finish\\\" or "
        "\\\"fail\\\"\"); a non-final message carrying continue (0) contradicts no sentence",
    ),
    "status-ttl-in-seconds": Planted(
        "server.js",
        "queue: this.inFlight, ttl_ms: this.config.status_ttl_ms };",
        "queue: this.inFlight, ttl_ms: this.config.status_ttl_ms / 1000 };",
        "FAILED",
        row="R-6.1-STATUS-INTERVAL",
    ),
    "event-digest-d0": Planted(
        "session.js",
        "kind, committed: this.output.length, digest: this.digest };",
        "kind, committed: this.output.length, digest: this.d0 };",
        "FAILED",
    ),
    "event-epoch-one": Planted(
        "session.js",
        "return { session: this.session, epoch: this.epoch, kind,",
        "return { session: this.session, epoch: 1, kind,",
        "FAILED",
    ),
    "self-decode-end-event-kind-2": Planted(
        "session.js",
        "return this.event(P.ACTION.continue); // P1-EVT-1",
        "return this.event(P.ACTION.switch); // P1-EVT-1",
        "NON-STRICT",
        "§6.5.2 says only \"it then sends an event so that the router assigns a drafter again\" and names no kind; "
        "P1-EVT-1 alone makes it \"kind 0 when self-decoding ends and a drafter is needed again\"",
        "P1-EVT-1/EVENTS",
    ),
    "finish-event-not-sent": Planted(
        "session.js",
        "case P.ACTION.finish: this.phase = PHASE.finished; return [this.event(P.ACTION.finish)];",
        "case P.ACTION.finish: this.phase = PHASE.finished; return [];",
        "NON-STRICT",
        "the draft names events only for switch and the end of self-decoding (§6.5.2); P1-EVT-1 alone adds \"4 and "
        "5 when the session finishes or fails\"",
        "P1-EVT-1/EVENTS",
    ),
    # The record of a resumed (epoch 2) session carries epoch 1, below the router's fence: the stand-in's own
    # pre-append check (or an enforcing cache's 409) takes it as fenced, so the record never reaches the log and the
    # harness sees a valid proposal after the resume refused with 409 sdcp-stale-epoch (R-6.9-RESUME), not a record.
    "record-epoch-one": Planted(
        "session.js",
        "return { epoch: this.epoch, round, emitted,",
        "return { epoch: 1, round, emitted,",
        "FAILED",
        row="R-6.9-RESUME",
    ),
    "record-digest-stale": Planted(
        "server.js",
        "outcome = await appendRecord(this.origins, slot.commitLog, pending.record, log);",
        "outcome = await appendRecord(this.origins, slot.commitLog, { ...pending.record, digest: session.digest }, log);",
        "FAILED",
    ),
    "first-append-unconditional": Planted(
        "links.js",
        "const headers = before.etag === null ? { 'if-none-match': '*' } : { 'if-match': before.etag };",
        "const headers = before.etag === null ? {} : { 'if-match': before.etag };",
        "FAILED",
        row="R-6.8-CONDITIONAL",
    ),
    "rule-3-accepted": Planted(
        "server.js",
        "if (contract.rule !== 1 && contract.rule !== 2) throw",
        "if (contract.rule < 1 || contract.rule > 3) throw",
        "FAILED",
        row="R-6.1-VALIDATES",
    ),
    "verdict-emitted-untruncated": Planted(
        "session.js",
        "emitted: kept, committed: record.committed",
        "emitted: outcome.emitted, committed: record.committed",
        "FAILED",
    ),
    "fail-keeps-session-open": Planted(
        "session.js",
        "case P.ACTION.fail: this.phase = PHASE.failed; return [this.event(P.ACTION.fail)];",
        "case P.ACTION.fail: return [this.event(P.ACTION.fail)];",
        "FAILED",
        row="R-6.5.2-ENDED",
    ),
    "self-max-plus-one": Planted(
        "session.js",
        "this.selfDecodedInPeriod < this.contract.self_max",
        "this.selfDecodedInPeriod <= this.contract.self_max",
        "FAILED",
        row="R-6.5.2-SELF-RUN",
    ),
    "self-decoded-finish-leaves-session-open": Planted(
        "session.js",
        "case P.ACTION.finish: this.phase = PHASE.finished; return [this.event(P.ACTION.finish)];",
        "case P.ACTION.finish: if (pending.verdict) { this.phase = PHASE.finished; return [this.event(P.ACTION.finish)]; } return [];",
        "FAILED",
        row="R-6.7-FINAL",
    ),
    "problem-type-bare-suffix": Planted(
        "../node_common/protocol.js",
        "const PROBLEM_PREFIX = 'urn:ietf:params:sdcp:problem:';",
        "const PROBLEM_PREFIX = '';",
        "NON-STRICT",
        "RFC 9457 lets type be a URI reference, so a bare \"sdcp-stale-base\" is a (relative) type; only P1-ERR-1 "
        "fixes the prefix urn:ietf:params:sdcp:problem:, and the harness matches the suffix (P1-JUDGE-1: \"the "
        "type's URN prefix under P1-ERR-1\" is NON-STRICT)",
        "P1-ERR-1",
    ),
}


ROUTER: dict[str, Planted] = {
    # batch of 2026-12-06
    "front-final-before-tokens": Planted(
        "router.js",
        "if (ended(s) && from >= s.endCommitted) return output([], true);",
        "if (ended(s) && from >= s.tokens.length) return output([], true);",
        "FAILED",
    ),
    "fence-same-epoch": Planted(
        "router.js",
        "const newEpoch = epoch + 1;",
        "const newEpoch = epoch;",
        "FAILED",
    ),
    "refusing-drafter-hammered": Planted(
        "router.js",
        "      this.log(`drafter ${drafter} refused the assignment: ${sent ? sent.status : 'no answer'}`);\n      refused.add(drafter);\n",
        "      this.log(`drafter ${drafter} refused the assignment: ${sent ? sent.status : 'no answer'}`);\n",
        "PASSED",
        "no case has a drafter refuse an assignment while another is eligible: what a router does then is the local "
        "policy of R-6.1-SELECTION (MAY); the profile does not say (listed as a gap)",
    ),
    # transport as a client (§5.1): judged on R-5.1-MTLS-CLIENT, D-JUDGE-REFUSED-CLIENT
    "outbound-tls12-only": OUTBOUND_TLS12_ONLY,
    "eligible-grace-2s": Planted(
        "router.js",
        "eligible(instance) { return instance.expiresAt > Date.now(); }",
        "eligible(instance) { return instance.expiresAt + 2000 > Date.now(); }",
        "FAILED",
    ),
    "status-ttl-from-first-report": Planted(
        "router.js",
        "instance.expiresAt = Date.now() + status.ttl_ms;",
        "if (!instance.expiresAt) instance.expiresAt = Date.now() + status.ttl_ms; else instance.expiresAt = Math.max(instance.expiresAt, Date.now() + status.ttl_ms);",
        "FAILED",
    ),
    "load-ranking-reversed": Planted(
        "router.js",
        "|| (a.load - b.load) ||",
        "|| (b.load - a.load) ||",
        "PASSED",
        "the draft leaves the choice among eligible instances open (SELECTION-001 is INFORMATIONAL)",
    ),
    "status-sender-unchecked": Planted(
        "router.js",
        "if (peer !== status.instance) throw",
        "if (!peer) throw",
        "NON-STRICT",
        "P1-RTR-2 alone says who may report an instance's status",
    ),
    "status-id-unchecked": Planted(
        "router.js",
        "if (!/^[A-Za-z0-9_-]+$/.test(encodedId) || Buffer.from(encodedId, 'base64url').toString('utf8') !== status.instance) {",
        "if (!/^[A-Za-z0-9_-]+$/.test(encodedId)) {",
        "NON-STRICT",
        "P1-RTR-1 alone defines the path's {id}",
    ),
    "expiry-timer-double-ttl": Planted(
        "router.js",
        "setTimeout(() => this.expired(instance), status.ttl_ms + 5);",
        "setTimeout(() => this.expired(instance), 2 * status.ttl_ms + 5);",
        "PASSED",
        "the draft sets no deadline for acting on an expiry",
    ),
    "open-epoch-0": Planted(
        "router.js",
        "const opening = { session: id, epoch: 1, contract,",
        "const opening = { session: id, epoch: 0, contract,",
        "INCOMPLETE",
    ),
    "open-contract-mmax-clamped": Planted(
        "router.js",
        "const opening = { session: id, epoch: 1, contract, prompt",
        "const opening = { session: id, epoch: 1, contract: { ...contract, m_max: Math.min(contract.m_max, 16) }, prompt",
        "FAILED",
    ),
    "open-prompt-drops-last": Planted(
        "router.js",
        "epoch: 1, contract, prompt: request.prompt, commit_log",
        "epoch: 1, contract, prompt: Array.isArray(request.prompt) && request.prompt.length > 1 ? request.prompt.slice(0, -1) : request.prompt, commit_log",
        "INCOMPLETE",
        "the prompt is P1-FRONT-1's (NON-STRICT; the judge then follows the router's prompt, D-JUDGE-R10), but this router's own state check then refuses the verifier's digests and it never assigns a drafter: the sanity case fails on R-6.1-ASSIGN-ORDER",
    ),
    "commit-log-per-router": Planted(
        "router.js",
        "const commitLog = `${this.config.cache}sdcp-router/${id.toString('hex')}/commit-log-${crypto.randomBytes(6).toString('hex')}`;",
        "const commitLog = `${this.config.cache}sdcp-router/commit-log`;",
        "INCOMPLETE",
    ),
    "session-id-ignored": Planted(
        "router.js",
        "const id = request.session || crypto.randomBytes(16);",
        "const id = crypto.randomBytes(16);",
        "NON-STRICT",
        "P1-FRONT-1 alone opens the session under the id the client gave",
    ),
    "cannot-serve-503": Planted(
        "router.js",
        "throw new P.ProtocolError('badContract', 'no configured drafter has a model the contract permits');",
        "throw new P.HttpError(503, 'no configured drafter has a model the contract permits');",
        "NON-STRICT",
        "P1-FRONT-1 alone names 422 sdcp-bad-contract",
    ),
    "permitted-any-when-listed": Planted(
        "router.js",
        "return !contract.drafters || contract.drafters.some((d) => Buffer.from(d).toString('hex') === instance.model);",
        "return !contract.drafters || contract.drafters.length > 0;",
        "FAILED",
    ),
    "assign-carries-put-body-state": Planted(
        "router.js",
        "P.encode(this.assignmentBody(s, drafter, state, tokensUri))",
        "P.encode(this.assignmentBody(s, drafter, putBody, putBody.committed_tokens ?? null))",
        "FAILED",
    ),
    "assign-round-plus-one": Planted(
        "router.js",
        "round: state.round, committed: state.committed, digest: state.digest,",
        "round: state.round + 1, committed: state.committed, digest: state.digest,",
        "INCOMPLETE",
    ),
    "tokens-ref-stale-cache": Planted(
        "router.js",
        "if (s.tokensRef && s.tokensRef.n === n) return s.tokensRef.uri;",
        "if (s.tokensRef && s.tokensRef.n <= n) return s.tokensRef.uri;",
        "FAILED",
    ),
    "committed-tokens-omitted": Planted(
        "router.js",
        "    if (state.committed > 0) body.committed_tokens = tokensUri;\n",
        "",
        "NON-STRICT",
        "P1-RTR-3 alone requires committed_tokens (§5.2: optional)",
    ),
    "m-init-not-capped": Planted(
        "router.js",
        "m_init: Math.max(1, Math.min(s.contract.m_max, M_INIT)),",
        "m_init: M_INIT,",
        "NON-STRICT",
        "P1-DRF-2 alone caps m_init",
    ),
    "contract-carries-sampling": Planted(
        "router.js",
        "session: s.id, epoch: s.epoch, contract: s.contract, verifier",
        "session: s.id, epoch: s.epoch, contract: s.sampling ? { ...s.contract, sampling: s.sampling } : s.contract, verifier",
        "FAILED",
    ),
    "sampling-dropped": Planted(
        "router.js",
        "    if (s.sampling) body.sampling = s.sampling; // §6.6: the latest accepted profile in every later assignment\n",
        "",
        "FAILED",
    ),
    "switch-may-keep-drafter": Planted(
        "router.js",
        "this.assign(s, ev.kind === 2 ? s.drafter : null)",
        "this.assign(s, null)",
        "FAILED",
    ),
    "kind0-ignored": Planted(
        "router.js",
        "      case 0: // self-decoding ended, a drafter is needed again\n      case 2:",
        "      case 2:",
        "FAILED",
    ),
    "unknown-kind-as-finish": Planted(
        "router.js",
        "this.end(s, 5, ev.committed, `unknown event kind ${ev.kind}`);",
        "this.end(s, 4, ev.committed, `unknown event kind ${ev.kind}`);",
        "FAILED",
    ),
    "event-sender-unchecked": Planted(
        "router.js",
        "if (peer !== s.verifier) throw new P.ProtocolError('notAssigned'",
        "if (!peer) throw new P.ProtocolError('notAssigned'",
        "NON-STRICT",
        "P1-RTR-2 alone says who may send events",
    ),
    "event-old-epoch-accepted": Planted(
        "router.js",
        "if (ev.epoch !== s.epoch || ev.epoch < s.minEpoch) throw",
        "if (ev.epoch > s.epoch) throw",
        "PASSED",
        "the sender check refuses such an event first",
    ),
    "end-committed-router-copy": Planted(
        "router.js",
        "this.end(s, ev.kind, ev.committed, `event ${ev.kind}`);",
        "this.end(s, ev.kind, s.tokens.length, `event ${ev.kind}`);",
        "FAILED",
    ),
    "front-copy-skips-one": Planted(
        "router.js",
        "if (from < s.tokens.length) return output(s.tokens.slice(from));",
        "if (from < s.tokens.length) return output(s.tokens.slice(from > 0 ? from + 1 : from));",
        "FAILED",
    ),
    "front-final-no-finish": Planted(
        "router.js",
        "      if (final) out.finish = s.finish;\n",
        "",
        "NON-STRICT",
        "P1-FRONT-2 alone carries finish on the front",
    ),
    "front-no-minepoch-check": Planted(
        "router.js",
        "if (out.epoch < s.minEpoch || out.epoch < s.epoch || s.epoch !== epoch || s.verifier !== verifier) continue;",
        "if (s.verifier !== verifier) continue;",
        "FAILED",
    ),
    "policy-from-round-equal": Planted(
        "router.js",
        "let fromRound = s.maxRound + 1;",
        "let fromRound = s.maxRound;",
        "FAILED",
    ),
    "policy-retry-own-guess": Planted(
        "router.js",
        "fromRound = round + 1;\n",
        "fromRound += 1;\n",
        "FAILED",
    ),
    "fence-epoch-E": Planted(
        "router.js",
        "records = await appendFence(this.origins, s.commitLog, newEpoch);",
        "records = await appendFence(this.origins, s.commitLog, epoch);",
        "FAILED",
    ),
    "fence-no-if-none-match": Planted(
        "links.js",
        "const headers = before ? { 'if-match': before.etag } : { 'if-none-match': '*' };",
        "const headers = before ? { 'if-match': before.etag } : {};",
        "FAILED",
    ),
    "fence-412-as-success": Planted(
        "links.js",
        "if (reply.status === 412) continue;",
        "if (reply.status === 412) return [...records, { fence: true, epoch }];",
        "FAILED",
    ),
    "fence-seen-off-by-one": Planted(
        "links.js",
        "if (records.some((r) => r.fence && r.epoch >= epoch)) return records;",
        "if (records.some((r) => r.fence && r.epoch >= epoch - 1)) return records;",
        "FAILED",
    ),
    "counted-strict-gt": Planted(
        "links.js",
        "if (record.epoch >= highestFence) counted.push(record);",
        "if (record.epoch > highestFence) counted.push(record);",
        "FAILED",
    ),
    "counted-ignores-fences": Planted(
        "links.js",
        "if (record.fence) { highestFence = Math.max(highestFence, record.epoch); continue; }",
        "if (record.fence) continue;",
        "FAILED",
    ),
    "resume-from-router-state": Planted(
        "router.js",
        "const resume = last ? { round: last.round, committed: last.committed, digest: last.digest } : { round: 0, committed: 0, digest: s.d0 };",
        "const resume = s.known.committed > 0 ? { round: s.known.round, committed: s.known.committed, digest: s.known.digest } : last ? { round: last.round, committed: last.committed, digest: last.digest } : { round: 0, committed: 0, digest: s.d0 };",
        "FAILED",
    ),
    "resume-digest-unchecked": Planted(
        "router.js",
        "if (last && (tokens.length !== last.committed || !P.extendDigest(s.d0, tokens).equals(last.digest))) {",
        "if (last && tokens.length !== last.committed) {",
        "NON-STRICT",
        "P1-RTR-6 alone has the router check the log's digest",
    ),
    "failover-may-pick-failed": Planted(
        "router.js",
        "for (const candidate of this.ranked(2, (i) => i.uri !== failedVerifier)) {",
        "for (const candidate of this.ranked(2)) {",
        "FAILED",
    ),
    "failover-ignores-expiry": Planted(
        "router.js",
        "for (const candidate of this.ranked(2, (i) => i.uri !== failedVerifier)) {",
        "for (const candidate of [...this.instances.values()].filter((i) => i.role === 2 && i.uri !== failedVerifier)) {",
        "FAILED",
    ),
    "failures-not-reset": Planted(
        "router.js",
        "if (!failed) { instance.failures = 0; return; }",
        "if (!failed) return;",
        "NON-STRICT",
        "P1-RTR-5 alone defines a failed verifier",
    ),
    "failover-no-reassign": Planted(
        "router.js",
        "          await this.assign(s);\n          return;",
        "          s.needsDrafter = true;\n          return;",
        "FAILED",
    ),
    "drafter-expiry-active-only-self": Planted(
        "router.js",
        "if (s.drafter === instance.uri && s.phase === ACTIVE) {",
        "if (s.drafter === instance.uri && s.phase === SELF) {",
        "FAILED",
    ),
    "drafter-expiry-no-avoid": Planted(
        "router.js",
        "this.serially(s, () => this.assign(s, instance.uri));",
        "this.serially(s, () => this.assign(s));",
        "PASSED",
        "the expired drafter is not chosen anyway: unobservable",
    ),
    "unknown-keys-rejected": Planted(
        "protocol.js",
        "  return parseChecked(bytesOrValue, MESSAGES[kind], kind);",
        "  return parseChecked(bytesOrValue, MESSAGES[kind], kind, kind !== 'state' && kind !== 'output');",
        "FAILED",
    ),
    "problem-json-as-sdcp-cbor": Planted(
        "server.js",
        "answer = { status, body: P.problemBody(error.status ? error : new P.HttpError(500, error.message)), type: 'application/problem+json' };",
        "answer = { status, body: P.problemBody(error.status ? error : new P.HttpError(500, error.message)), type: P.MEDIA_TYPE };",
        "FAILED",
    ),
    "problem-prefix-wrong": Planted(
        "../node_common/protocol.js",
        "export const PROBLEM_PREFIX = 'urn:ietf:params:sdcp:problem:';",
        "export const PROBLEM_PREFIX = 'urn:ietf:params:sdcp:';",
        "NON-STRICT",
        "P1-ERR-1 alone gives the URN; P1-JUDGE-1 makes its prefix NON-STRICT",
    ),
    "stale-epoch-400": Planted(
        "../node_common/protocol.js",
        "staleEpoch: ['sdcp-stale-epoch', 409],",
        "staleEpoch: ['sdcp-stale-epoch', 400],",
        "PASSED",
        "KNOWN: neither text names the router's answer to an event at another epoch from the current verifier "
        "(the reference decides 409 sdcp-stale-epoch, D-RTR-7): no case judges it",
    ),
    "nondeterministic-keys": Planted(
        "../node_common/protocol.js",
        "    keys.sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));\n",
        "",
        "NON-STRICT",
        "P1-MSG-1 alone asks for deterministic encoding",
    ),
    "tls12-allowed": Planted(
        "../node_common/server.js",
        "requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3', allowHTTP1: false,",
        "requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.2', allowHTTP1: false,",
        "FAILED",
    ),
    "client-cert-optional": Planted(
        "../node_common/server.js",
        "requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3', allowHTTP1: false,",
        "requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.3', allowHTTP1: false,",
        "FAILED",
    ),
    # second batch: expiry units, failure thresholds, the order of the assignment, the resume member
    "open-ignores-expiry": Planted(
        "router.js",
        "const candidates = this.ranked(2);",
        "const candidates = [...this.instances.values()].filter((i) => i.role === 2);",
        "FAILED",
    ),
    "status-ttl-as-seconds": Planted(
        "router.js",
        "instance.expiresAt = Date.now() + status.ttl_ms;",
        "instance.expiresAt = Date.now() + 1000 * status.ttl_ms;",
        "FAILED",
    ),
    "failed-after-two": Planted(
        "router.js",
        "const FAIL_COUNT = 3;",
        "const FAIL_COUNT = 2;",
        "NON-STRICT",
        "P1-RTR-5 alone defines a failed verifier (three failures in a row)",
    ),
    "failed-without-span": Planted(
        "router.js",
        "const FAIL_SPAN_MS = 500;",
        "const FAIL_SPAN_MS = 0;",
        "NON-STRICT",
        "P1-RTR-5's 0.5 s (profile): three quick failures in a row are not a failed verifier "
        "(RTR-P1-RTR-5-QUICK-001)",
    ),
    "m-init-is-m-max": Planted(
        "router.js",
        "m_init: Math.max(1, Math.min(s.contract.m_max, M_INIT)),",
        "m_init: s.contract.m_max,",
        "PASSED",
        "m_init is the router's choice within 1..m_max (§5.2, P1-DRF-2): conformant",
    ),
    "drafter-told-before-verifier": Planted(
        "router.js",
        "        reply = await this.origins.request('PUT', `${s.verifier}sessions/${P.b64url(s.id)}/drafter`, "
        "P.encode(putBody));",
        "        await this.origins.request('POST', `${drafter}assignments`, P.encode(putBody)).catch(() => null);\n"
        "        reply = await this.origins.request('PUT', `${s.verifier}sessions/${P.b64url(s.id)}/drafter`, "
        "P.encode(putBody));",
        "INCOMPLETE",
        "§6.1's order is in the sanity case (R-6.1-ASSIGN-ORDER)",
    ),
    "no-resume-from-empty-log": Planted(
        "router.js",
        "      resume: { ...resume, committed_tokens: tokensUri },",
        "      ...(last ? { resume: { ...resume, committed_tokens: tokensUri } } : {}),",
        "FAILED",
    ),
    # probes added at stop 31
    "committed-tokens-digest-unchecked": Planted(
        "router.js", "if (!P.extendDigest(s.d0, tokens).equals(Buffer.from(digest))) throw", "if (false) throw", "PASSED",
        "the harness's verifiers serve output that matches their digests, and outside resume (P1-RTR-6, planted as "
        "resume-digest-unchecked) no sentence has the router check a verifier's output against its digest",
    ),
    "m-init-zero": Planted(
        "router.js", "m_init: Math.max(1, Math.min(s.contract.m_max, M_INIT)),", "m_init: 0,", "INCOMPLETE",
        "the harness's verifier refuses the PUT …/drafter with m_init 0 as P1-DRF-2 has it, so no session gets a "
        "drafter and the sanity case fails, naming the refusal",
    ),
    # batch of 2026-12-07 (red team)
    "contract-error-bad-message": Planted(
        "../node_common/protocol.js",
        "if (error instanceof FieldError) throw new ProtocolError('badContract', error.message);",
        "if (error instanceof FieldError) throw new ProtocolError('badMessage', error.message);",
        "FAILED",
        row="R-4.1-UNKNOWN-KEY-ROUTER",
    ),
    "assign-epoch-always-1": Planted(
        "router.js",
        "session: s.id, epoch: s.epoch, contract: s.contract, verifier: s.verifier, drafter, prompt: s.prompt,",
        "session: s.id, epoch: 1, contract: s.contract, verifier: s.verifier, drafter, prompt: s.prompt,",
        "FAILED",
    ),
    "resume-open-old-epoch": Planted(
        "router.js",
        "session: s.id, epoch: newEpoch, contract: s.contract, prompt: s.prompt, commit_log: s.commitLog,",
        "session: s.id, epoch, contract: s.contract, prompt: s.prompt, commit_log: s.commitLog,",
        "FAILED",
    ),
    "fence-skipped-empty-log": Planted(
        "links.js",
        "const data = before ? before.data : Buffer.alloc(0);",
        "if (!before) return []; const data = before.data; // no log yet: nothing to fence",
        "FAILED",
    ),
    "verifier-expiry-no-failover": Planted(
        "router.js",
        "if (instance.role === 2) { this.verifierFailed(instance.uri, 'its status expired'); return; }",
        "if (instance.role === 2) return; // a verifier has failed only when its resources fail",
        "FAILED",
        row="R-6.9-ROUTER-RESUME",
    ),
    "not-assigned-401": Planted(
        "../node_common/protocol.js",
        "notAssigned: ['sdcp-not-assigned', 403],",
        "notAssigned: ['sdcp-not-assigned', 401],",
        "NON-STRICT",
        "the router's refusals of a status report or event from the wrong sender are P1-RTR-2's alone ('else 403')",
    ),
    "waiting-sessions-never-assigned": Planted(
        "router.js",
        "      for (const s of this.sessions.values()) if (s.needsDrafter && s.phase === ACTIVE) this.serially(s, () => this.assign(s));",
        "      // sessions left without a drafter wait for the next event",
        "FAILED",
        row="R-6.1-PERMITTED",
    ),
    "front-epoch-always-1": Planted(
        "router.js",
        "const out = { session: s.id, epoch: s.epoch, from, tokens, final };",
        "const out = { session: s.id, epoch: 1, from, tokens, final };",
        "NON-STRICT",
        "the front's output is P1-FRONT-2's ('the router acting as the front end of §6.7'); §6.7's 'every output "
        "message carries the session epoch' binds the verifier's output, which the router reads correctly (the "
        "tokens are the committed ones: D-JUDGE-R13)",
        "P1-FRONT-2/OUTPUT",
    ),
    # batch of 2026-12-07, router red team 2
    "rt2-queue-ignored": Planted(
        "router.js",
        "(a.load - b.load) || (a.queue - b.queue) ||",
        "(a.load - b.load) ||",
        "PASSED",
        "§6.1: 'Drafter selection is a local policy based on the drafters' status reports, for example preferring "
        "drafters with low load and queue': ignoring the queue is a local policy",
    ),
    "rt2-first-422-final": Planted(
        "router.js",
        "if (answer.status === 422) refusals += 1;",
        "if (answer.status === 422) throw new P.ProtocolError('badContract', `${candidate.uri} does not serve the contract`);",
        "NON-STRICT",
        "§6.1 only says 'The router selects a verifier'; P1-FRONT-1 alone gives 422 only when no verifier serves the "
        "target, so refusing after one verifier's 422 while another serves it is profile-only",
        "P1-FRONT-1/OPEN",
    ),
    "rt2-maxround-not-from-put": Planted(
        "router.js",
        "      s.maxRound = Math.max(s.maxRound, state.round);\n      // P1-RTR-3",
        "      // P1-RTR-3",
        "FAILED",
        row="R-6.6-FROM-ROUND",
    ),
    "rt2-sampling-merged": Planted(
        "router.js",
        "s.sampling = sampling;",
        "s.sampling = { ...(s.sampling || {}), ...sampling };",
        "FAILED",
        row="R-6.6-LATER-ASSIGNMENTS",
    ),
    "rt2-committed-tokens-with-prompt": Planted(
        "router.js",
        "const uri = await putTokens(this.origins, this.config.cache, s.id, s.tokens.slice(0, n));",
        "const uri = await putTokens(this.origins, this.config.cache, s.id, [...(Array.isArray(s.prompt) ? s.prompt : []), ...s.tokens.slice(0, n)]);",
        "FAILED",
        row="R-5.2-COMMITTED-TOKENS",
    ),
    "rt2-resume-round-next": Planted(
        "router.js",
        "const resume = last ? { round: last.round, committed",
        "const resume = last ? { round: last.round + 1, committed",
        "FAILED",
        row="R-6.9-ROUTER-RESUME",
    ),
    "rt2-self-decode-reassigns": Planted(
        "router.js",
        "        s.phase = SELF;\n",
        "        s.phase = ACTIVE; this.serially(s, () => this.assign(s)); return;\n",
        "NON-STRICT",
        "§6.5.2 has the router assign a drafter again after the verifier's end-of-period event, but no sentence of the "
        "draft forbids an assignment during self-decoding (as for the verifier, assignment-leaves-self-decoding-on); "
        "P1-EVT-1 is what makes the period's end, not its start, the moment to assign",
        "P1-EVT-1/SELF-DECODE",
    ),
    "rt2-switch-no-same-fallback": Planted(
        "router.js",
        "const choice = permitted.find((i) => i.uri !== avoid) || permitted[0];",
        "const choice = permitted.find((i) => i.uri !== avoid);",
        "NON-STRICT",
        "the draft's switch names 'another drafter'; with none eligible only P1-RTR-5 says to reassign the same one",
        "P1-RTR-5/SAME-DRAFTER",
    ),
}

DRAFTER: dict[str, Planted] = {
    # batch of 2026-12-06
    "drafts-from-prompt-only": Planted(
        "server.js",
        "context() { return this.prompt.concat(this.tokens); }",
        "context() { return this.prompt.slice(); }",
        "NON-STRICT",
        "under rule 1 only P1-DRF-4 asks for the greedy tokens of the committed prefix; no proposal continues a "
        "rejected token, so no draft state was kept (D-JUDGE-KEPT-STATE; it was FAILED on R-6.3-DISCARD before)",
    ),
    "resync-adopts-unchecked-prefix": Planted(
        "server.js",
        "if (n <= s.committed && s.digests[n].equals(state.digest)) {",
        "if (n <= s.committed) {",
        "PASSED",
        "unobservable: a state at or below the drafter's committed length whose digest differs from its own would "
        "mean a verifier that rewrote committed tokens, which no case plays",
    ),
    "stale-base-final": Planted(
        "server.js",
        "if (suffix === 'sdcp-stale-base') return { kind: 'stale-base', state };",
        "if (suffix === 'sdcp-stale-base-x') return { kind: 'stale-base', state };",
        "NON-STRICT",
        "P1-DRF-6 alone says a drafter resynchronises; DRF-5.2-UNKNOWN-KEYS-003 had FAILED it on the unknown member "
        "of the state, which a control stale-base now tells apart (D-JUDGE-D20)",
    ),
    "prompt-token-v-accepted": Planted(
        "server.js",
        "if (prompt.some((t) => t >= this.model.vocab)) throw",
        "if (prompt.some((t) => t > this.model.vocab)) throw",
        "NON-STRICT",
        "P1-MSG-2 alone refuses token V (DRF-P1-MSG-2-VOCAB-001, new: no drafter case sent it before)",
    ),
    "unregistered-rule-accepted": Planted(
        "server.js",
        "if (contract.rule !== 1 && contract.rule !== 2) throw",
        "if (contract.rule !== 1 && contract.rule !== 2 && contract.rule !== 3) throw",
        "PASSED",
        "no sentence has a drafter refuse an unregistered rule: §6.1 has the verifier validate the contract, "
        "P1-DRF-3 lists the drafter's refusals (models, tokenizer), and the router never relays a contract its "
        "verifier refused",
    ),
    "m-max-zero-accepted": Planted(
        "server.js",
        "if (contract.m_max < 1) throw new P.ProtocolError('badContract', 'm_max 0 (P1-CTL-4)');",
        "if (contract.m_max < 0) throw new P.ProtocolError('badContract', 'm_max 0 (P1-CTL-4)');",
        "PASSED",
        "P1-CTL-4's refusal of m_max 0 is the verifier's (its counters and limits); P1-DRF-2 has the drafter refuse "
        "m_init 0 only",
    ),
    # transport as a client (§5.1): judged on R-5.1-MTLS-CLIENT, D-JUDGE-REFUSED-CLIENT
    "no-client-certificate": Planted(
        "../node_common/links.js",
        "session = http2.connect(origin, { ...this.tls, minVersion: 'TLSv1.3' });",
        "session = http2.connect(origin, { ca: this.tls.ca, minVersion: 'TLSv1.3' });",
        "INCOMPLETE",
        "the sanity case fails: nothing reaches the harness",
        "R-5.1-MTLS-CLIENT",
    ),
    "tls12-only": OUTBOUND_TLS12_ONLY,
    "router-check-any-peer": Planted(
        "server.js",
        "if (!this.config.routers.includes(peer)) throw",
        "if (!peer) throw",
        "NON-STRICT",
        "P1-DRF-1 alone names who may assign",
    ),
    "equal-epoch-refused": Planted(
        "server.js",
        "if (held && a.epoch < held.epoch) { // P1-DRF-7",
        "if (held && a.epoch <= held.epoch) { // P1-DRF-7",
        "NON-STRICT",
        "P1-DRF-7 alone makes an equal epoch replace",
    ),
    "replaced-loop-keeps-running": Planted(
        "server.js",
        "if (current) current.active = false; // P1-DRF-7",
        "// P1-DRF-7",
        "FAILED",
    ),
    "committed-tokens-trusted": Planted(
        "server.js",
        "if (committed.length !== a.committed || !digests[a.committed].equals(a.digest)) {",
        "if (committed.length !== a.committed) {",
        "FAILED",
    ),
    "d0-over-current-sampling": Planted(
        "server.js",
        "const d0 = P.prefixDigest(P.contractDigest(contract), prompt);",
        "const d0 = P.prefixDigest(P.contractDigest(a.sampling ? { ...contract, sampling: a.sampling } : contract), prompt);",
        "FAILED",
    ),
    "new-drafter-round-from-committed": Planted(
        "server.js",
        "prompt, tokens: committedTokens, digests, round: a.round,",
        "prompt, tokens: committedTokens, digests, round: a.committed,",
        "FAILED",
    ),
    "drafters-first-entry-only": Planted(
        "server.js",
        "if (contract.drafters && !contract.drafters.some((d) => d.equals(this.model.digest))) {",
        "if (contract.drafters && !contract.drafters[0].equals(this.model.digest)) {",
        "NON-STRICT",
        "P1-DRF-3 alone has a drafter check `drafters`",
    ),
    "resync-round-plus-one": Planted(
        "server.js",
        "Object.assign(s, { tokens, digests, round: state.round });",
        "Object.assign(s, { tokens, digests, round: state.round + 1 });",
        "FAILED",
    ),
    "resync-output-unchecked": Planted(
        "server.js",
        "if (chained[n].equals(state.digest)) { tokens = candidate; digests = chained; break; }",
        "tokens = candidate; digests = chained; break;",
        "FAILED",
    ),
    "resync-local-prefix-unchecked": Planted(
        "server.js",
        "if (n <= s.committed && s.digests[n].equals(state.digest)) {",
        "if (n <= s.committed) {",
        "PASSED",
        "KNOWN: no protocol path forks a session below what its drafter holds (a verifier commits before it answers), "
        "and P1-DRF-6 checks the tokens a drafter reads, not those it holds: no case forks it",
    ),
    "stop-states-forget-self-decode": Planted(
        "server.js",
        "const STOPPING_STATES = new Set([3, 4, 5]);",
        "const STOPPING_STATES = new Set([4, 5]);",
        "NON-STRICT",
        "P1-DRF-6 alone says state 3 stops the drafter",
    ),
    "chain-cbor-keys-lexicographic": Planted(
        "../node_common/protocol.js",
        "keys.sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));",
        "keys.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));",
        "INCOMPLETE",
    ),
    "state-digest-base64-not-url": Planted(
        "protocol.js",
        "const bytes = (v) => (typeof v === 'string' ? Buffer.from(v, 'base64url') : Buffer.from(v));",
        "const bytes = (v) => (typeof v === 'string' ? Buffer.from(v, 'base64') : Buffer.from(v));",
        "PASSED",
        "Node's base64 decoder reads the URL alphabet too: conformant by accident",
    ),
    "m-init-ignored": Planted(
        "server.js",
        "limit: Math.max(1, Math.min(a.contract.m_max, a.m_init)), // §6.2",
        "limit: Math.max(1, a.contract.m_max), // §6.2",
        "INCOMPLETE",
    ),
    "m-cap-only-on-reduce": Planted(
        "server.js",
        "s.limit = Math.max(1, v.m_cap); // the next M",
        "if (v.action === ACTION.reduce) s.limit = Math.max(1, v.m_cap); // the next M",
        "FAILED",
    ),
    "timeout-redrafts": Planted(
        "server.js",
        "console.error(`proposal lost: ${error.message}`);",
        "console.error(`proposal lost: ${error.message}`); return { kind: 'q-unavailable' };",
        "FAILED",
    ),
    "5xx-redrafts": Planted(
        "server.js",
        "console.error(`proposal answered ${reply.status}: lost`);",
        "console.error(`proposal answered ${reply.status}: lost`); return { kind: 'q-unavailable' };",
        "FAILED",
    ),
    "429-is-final": Planted(
        "server.js",
        "reply.status >= 400 && reply.status < 500 && reply.status !== 429) {",
        "reply.status >= 400 && reply.status < 500) {",
        "NON-STRICT",
        "P1-DRF-5 alone makes a 429 lost (a 4xx by class, §5.1)",
    ),
    "retry-window-2500ms": Planted(
        "server.js",
        "if (now() - first > this.config.retry_window_ms) return { kind: 'gave up' };",
        "if (now() - first > 2500) return { kind: 'gave up' };",
        "NON-STRICT",
        "P1-DRF-5 alone sets the 30 s",
    ),
    "unknown-action-continues": Planted(
        "server.js",
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue && v.action !== ACTION.reduce) s.active = false;',
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action >= ACTION.switch && v.action <= ACTION.fail) s.active = false;',
        "FAILED",
    ),
    "self-decode-continues": Planted(
        "server.js",
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue && v.action !== ACTION.reduce) s.active = false;',
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue && v.action !== ACTION.reduce && v.action !== ACTION.selfDecode) s.active = false;',
        "FAILED",
    ),
    "argmax-ties-to-larger": Planted(
        "../node_common/protocol.js",
        "for (let k = 1; k < row.length; k += 1) if (row[k] > row[best]) best = k;",
        "for (let k = 1; k < row.length; k += 1) if (row[k] >= row[best]) best = k;",
        "NON-STRICT",
        "P1-DRF-4 alone breaks the draft model's ties by the smallest id",
    ),
    "draw-from-f64-not-published-row": Planted(
        "server.js",
        "token = P.draw(row, P.uniform());",
        "token = P.draw(P.distribution(logits, s.profile), P.uniform());",
        "PASSED",
        "the binary64 and binary32 rows differ by rounding only: unobservable",
    ),
    "draw-profile-differs-from-rows": Planted(
        "server.js",
        "token = P.draw(row, P.uniform());",
        "token = P.draw(P.distribution(logits, s.contract.sampling ?? {}), P.uniform());",
        "FAILED",
    ),
    "ignore-assignment-sampling": Planted(
        "server.js",
        "profile: a.sampling ?? a.contract.sampling ?? {},",
        "profile: a.contract.sampling ?? {},",
        "PASSED",
        "the draft distribution is the drafter's own (R-5.2-SAMPLING-MEMBER is MAY): INFORMATIONAL",
    ),
    "q-rows-big-endian": Planted(
        "server.js",
        "const body = Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength); // little-endian",
        "const body = Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength).swap32(); // little-endian",
        "FAILED",
    ),
    "lease-in-seconds": Planted(
        "server.js",
        "headers: { 'sdcp-lease': String(this.config.lease_ms),",
        "headers: { 'sdcp-lease': String(this.config.lease_ms / 1000),",
        "FAILED",
    ),
    "q-rows-not-deleted": Planted(
        "server.js",
        "      this.release(qRows);\n      if (!s.active) break; // replaced meanwhile",
        "      if (!s.active) break; // replaced meanwhile",
        "NON-STRICT",
        "P1-DRF-8 alone has the drafter delete the objects",
    ),
    "q-rows-put-not-awaited": Planted(
        "server.js",
        "    for (let attempt = 0; attempt < 5 && s.active; attempt += 1) {\n      try {\n        const reply = await this.call('PUT', uri,",
        "    this.call('PUT', uri, { body, headers: { 'sdcp-lease': String(this.config.lease_ms), 'content-type': 'application/octet-stream' } }).catch(() => {}); if (body) return uri;\n    for (let attempt = 0; attempt < 5 && s.active; attempt += 1) {\n      try {\n        const reply = await this.call('PUT', uri,",
        "FAILED",
    ),
    "status-interval-equals-ttl": Planted(
        "server.js",
        "const status = setInterval(() => drafter.reportStatus(), config.status_ttl_ms / 3);",
        "const status = setInterval(() => drafter.reportStatus(), config.status_ttl_ms);",
        "FAILED",
        "by the mean gap (D-JUDGE-D15), about 1.5 ms over ttl_ms a gap: on a loaded machine it may read PASSED",
    ),
    "status-id-padded-base64": Planted(
        "server.js",
        "const id = Buffer.from(this.config.base_uri).toString('base64url');",
        "const id = Buffer.from(this.config.base_uri).toString('base64');",
        "NON-STRICT",
        "P1-RTR-1 alone fixes the path id's encoding",
    ),
    "accept-milli-from-alpha": Planted(
        "server.js",
        "this.acceptEwma = this.acceptEwma === null ? a / m : (1 - EWMA) * this.acceptEwma + EWMA * (a / m);",
        "this.acceptEwma = s.alpha;",
        "PASSED|NON-STRICT",
        "GAP: accept_milli is judged at a/M of 0 and 1 only (P1-DRF-8, profile), where a per-token alpha moves the "
        "same way; it is seen (NON-STRICT) only when another session's alpha, interleaved, moves it away from a/M",
    ),
    "status-role-verifier": Planted(
        "server.js",
        "const status = { instance: this.config.base_uri, role: 1,",
        "const status = { instance: this.config.base_uri, role: 2,",
        "INCOMPLETE",
    ),
    "tls12-accepted": Planted(
        "../node_common/server.js",
        "requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3',",
        "requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.2',",
        "FAILED",
    ),
    # second batch: limits, the verdict's fields, q_rows layout and lifetime, refusals, status units
    "m-over-limit-by-one": Planted(
        "server.js",
        "for (let m = 1; m <= limit; m += 1) {",
        "for (let m = 1; m <= limit + 1; m += 1) {",
        "INCOMPLETE",
        "the sanity case's first proposal already has M = m_init + 1 (R-6.2-M-BOUNDS)",
    ),
    "m-cap-above-m-max-obeyed": Planted(
        "server.js",
        "const limit = Math.max(1, Math.min(s.contract.m_max, s.limit));",
        "const limit = Math.max(1, s.limit);",
        "FAILED",
    ),
    "adopts-accepted-not-emitted": Planted(
        "server.js",
        "s.tokens = s.tokens.concat(v.emitted);",
        "s.tokens = s.tokens.concat(v.emitted.slice(0, v.accepted));",
        "INCOMPLETE",
        "the sanity case's second proposal is on a base one short of the verdict's (R-6.2-BASE)",
    ),
    "reduce-stops": Planted(
        "server.js",
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue && v.action !== ACTION.reduce) s.active = false;',
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue) s.active = false;',
        "FAILED",
    ),
    "q-rows-reversed": Planted(
        "server.js",
        "const row = rows.subarray(i * this.model.vocab, (i + 1) * this.model.vocab);",
        "const row = rows.subarray((m - 1 - i) * this.model.vocab, (m - i) * this.model.vocab);",
        "FAILED",
    ),
    "q-rows-deleted-before-verdict": Planted(
        "server.js",
        "      const outcome = await this.propose(s, body);\n      this.release(qRows);\n",
        "      this.release(qRows);\n      const outcome = await this.propose(s, body);\n",
        "FAILED",
    ),
    "403-retried": Planted(
        "server.js",
        "reply.status >= 400 && reply.status < 500 && reply.status !== 429) {",
        "reply.status >= 400 && reply.status < 500 && reply.status !== 429 && reply.status !== 403) {",
        "NON-STRICT",
        "P1-DRF-5 alone makes a 4xx final",
    ),
    "m-init-zero-accepted": Planted(
        "server.js",
        "    if (a.m_init < 1) throw new P.ProtocolError('badMessage', 'm_init 0 (P1-DRF-2)');\n",
        "",
        "FAILED",
        "accepting m_init 0 is P1-DRF-2's (NON-STRICT), but the proposal it then sends has M = 1 > m_init, which "
        "breaks §6.2's 1 <= M <= min(m_max, m_cap) (m_init before the first verdict)",
    ),
    "status-ttl-in-seconds": Planted(
        "server.js",
        "queue: 0, ttl_ms: this.config.status_ttl_ms };",
        "queue: 0, ttl_ms: Math.ceil(this.config.status_ttl_ms / 1000) };",
        "FAILED",
    ),
    # probes added at stop 31
    "round-ahead-after-verdict": Planted(
        "server.js", "    s.round = v.round;\n", "    s.round = v.round + 1;\n", "INCOMPLETE",
        "the second proposal of the sanity case already skips a round (R-6.2-ROUND)",
    ),
    "output-lower-epoch-accepted": Planted(
        "server.js", "if (out.epoch < epoch || out.from !== from + tokens.length) return null;",
        "if (out.from !== from + tokens.length) return null;", "PASSED",
        "the drafter reads output from the verifier of its assignment, which the harness plays at the current "
        "epoch: no output of a lower epoch ever reaches it",
    ),
    "q-rows-without-lease": Planted(
        "server.js", "headers: { 'sdcp-lease': String(this.config.lease_ms), 'content-type': 'application/octet-stream' }",
        "headers: { 'content-type': 'application/octet-stream' }", "NON-STRICT",
        "P1-MLC-3 alone carries a lease in SDCP-Lease",
    ),
    "rule1-samples-and-publishes": Planted(
        "server.js", "const rows = s.rule === 2 ? new Float32Array(m * this.model.vocab) : null;",
        "const rows = new Float32Array(m * this.model.vocab);", "NON-STRICT",
        "P1-DRF-4 alone makes a rule-1 drafter propose its greedy tokens without q_rows",
    ),
    "proposal-drafter-without-slash": Planted(
        "server.js", "round, drafter: this.config.base_uri, base: s.committed,",
        "round, drafter: this.config.base_uri.replace(/\\/$/, ''), base: s.committed,", "NON-STRICT",
        "P1-ID-1 alone says the proposal's drafter equals the certificate's URI SAN",
    ),
    "retries-without-backoff": Planted(
        "server.js", "await sleep(backoff * (0.75 + 0.5 * Math.random()));", "await sleep(0);", "NON-STRICT",
        "P1-DRF-5 alone asks for backoff",
    ),
    # batch of 2026-12-07 (red team)
    "q-rows-binary64": Planted(
        "server.js",
        "const rows = s.rule === 2 ? new Float32Array(m * this.model.vocab) : null;",
        "const rows = s.rule === 2 ? new Float64Array(m * this.model.vocab) : null;",
        "FAILED",
    ),
    "chain-uint32-little-endian": Planted(
        "../node_common/protocol.js",
        "  out.writeUInt32BE(value);",
        "  out.writeUInt32LE(value);",
        "INCOMPLETE",
        "§4.2's uint32 is in network byte order: d[0] differs, so the drafter refuses every assignment (its digest "
        "does not reproduce) and the sanity case fails",
    ),
    "keeps-old-verifier-on-reassign": Planted(
        "server.js",
        "const session = new Session(a, prompt, committed, digests);",
        "const session = new Session(current ? { ...a, verifier: current.verifier } : a, prompt, committed, digests);",
        "NON-STRICT",
        "after a failover the epoch-2 proposals go to the fenced old verifier, so the session is never served at "
        "the new one; but no keyword sentence of the draft says where a drafter sends its proposals (the "
        "assignment's 'verifier: tstr ; verifier base URI' names it), and what a drafter does with a replacing "
        "assignment is P1-DRF-7's",
        "P1-DRF-7/REPLACE",
    ),
    "m-always-limit": Planted(
        "server.js",
        "    return best;",
        "    return limit;",
        "PASSED",
        "§6.2 'Choice of M is local to the drafter. The following rule is RECOMMENDED': its inputs (the drafter's "
        "own alpha estimate, t_d, t_v) are not observable, so the harness reports a choice against its direction "
        "INFORMATIONAL (RFC 2119 reads RECOMMENDED as SHOULD, which would be NON-STRICT: a question for the profile)",
    ),
    "q-rows-key-not-per-session": Planted(
        "server.js",
        "const uri = `${this.config.cache}q_rows/${P.b64url(s.id)}/e${s.epoch}-r${round}-${randomBytes(6).toString('hex')}`;",
        "const uri = `${this.config.cache}q_rows/e${s.epoch}-r${round}`;",
        "FAILED",
    ),
    "5xx-final": Planted(
        "server.js",
        "reply.status >= 400 && reply.status < 500 && reply.status !== 429) {",
        "reply.status >= 400 && reply.status !== 429) {",
        "FAILED",
    ),
    # batch of 2026-12-07, drafter red team 2
    "switch-continues": Planted(
        "server.js",
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue && v.action !== ACTION.reduce) s.active = false;',
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue && v.action !== ACTION.reduce && v.action !== ACTION.switch) s.active = false;',
        "FAILED",
    ),
    "finish-continues": Planted(
        "server.js",
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue && v.action !== ACTION.reduce) s.active = false;',
        '// "fail" (§5.2, P1-DRF-9).\n    if (v.action !== ACTION.continue && v.action !== ACTION.reduce && v.action !== ACTION.finish) s.active = false;',
        "FAILED",
        "after a finish verdict the drafter sends one more proposal (410, final by P1-DRF-5). No keyword of the draft "
        "has a drafter stop on finish (§6.5.2's MUST is for switch); the harness judges proposing after the session "
        "ended like proposing after switch (D-JUDGE-D2, R-6.5.2-STOP-ON-END), as self-decode-continues shows",
        "R-6.5.2-STOP-ON-END",
    ),
    "m-cap-never-raised": Planted(
        "server.js",
        "s.limit = Math.max(1, v.m_cap); // the next M",
        "s.limit = Math.max(1, Math.min(s.limit, v.m_cap)); // the next M",
        "PASSED",
        "M stays within 1 <= M <= min(m_max, m_cap) (§6.2); not growing M again after a restore is a choice of M, "
        "local to the drafter (the RECOMMENDED rule: INFORMATIONAL at most)",
    ),
    "q-rows-half-mass": Planted(
        "server.js",
        "row.set(P.distribution(logits, s.profile));",
        "row.set(P.distribution(logits, s.profile).map((x) => x / 2));",
        "FAILED",
    ),
    # the harness PASSES this one (2026-12-07): no drafter case has stop tokens in a rule-2 contract, so DRF-5.2-
    # EXACT-ROW-001 never sees a row in which the drafter could skip one (a gap left for the next stop)
    "stop-tokens-never-sampled": Planted(
        "server.js",
        "token = P.draw(row, P.uniform());",
        "token = P.draw(row.map((w, k) => (s.contract.stop.includes(k) ? 0 : w)), P.uniform());",
        "FAILED",
    ),
    "assignment-answered-200": Planted(
        "server.js",
        "return { status: 204, type: null, body: Buffer.alloc(0) };",
        "return { status: 200, type: null, body: Buffer.alloc(0) };",
        "PASSED",
        "Table 1 says 'none (204)' without a keyword and §5.1 has clients handle codes by class; P1-MSG-4 fixes 204 "
        "and has clients treat any 2xx as success, so the harness accepts a 200 (no finding)",
    ),
    "resync-keeps-round": Planted(
        "server.js",
        "Object.assign(s, { tokens, digests, round: state.round });",
        "Object.assign(s, { tokens, digests });",
        "FAILED",
    ),
    "status-instance-without-slash": Planted(
        "server.js",
        "const status = { instance: this.config.base_uri, role: 1,",
        "const status = { instance: this.config.base_uri.replace(/\\/$/, ''), role: 1,",
        "NON-STRICT",
        "the draft gives status.instance no form; P1-ID-1/P1-RTR-1/P1-RTR-2 alone make it the base URI with its "
        "trailing '/' (D-JUDGE-STATUS-INSTANCE, in the proposal's status member as in a report)",
        "P1-ID-1/STATUS-INSTANCE",
    ),
}

PLANTED: dict[str, dict[str, Planted]] = {"verifier": VERIFIER, "router": ROUTER, "drafter": DRAFTER}
