// A stand-in SDCP drafter on Node.js's HTTP/2: POST assignments (§5.1 Table 1), drafting and proposing (§6.2),
// verdicts and their actions (§6.3-§6.5), lost verdicts (§6.9, P1-DRF-5), stale-base resynchronisation
// (P1-DRF-6) and status reports (§6.1), for closed-form bigram draft models (the logits after a context are a
// table row chosen by its last token).
//
// Started by run.sh, which passes the configuration as a JSON file (argv[2]). Prints "serving <base URI>" once
// it listens; SIGTERM or SIGINT stops it. Written from draft-sdcp.txt and PROFILE.md only.

import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as P from './protocol.js';
import { Origins } from './node_common/links.js';
import { listen, peerIdentity, secureServer } from './node_common/server.js';

const MEDIA_TYPE = 'application/sdcp+cbor';
const ACTION = { continue: 0, reduce: 1, switch: 2, selfDecode: 3, finish: 4, fail: 5 };
const STOPPING_STATES = new Set([3, 4, 5]); // P1-DRF-6 / P1-STATE-1: self-decoding, finished, failed
const EWMA = 0.3; // weight of the newest observation in accept_milli, alpha, t_d and t_v
const Q_REDRAFTS = 3; // new drafts of one round after sdcp-q-unavailable (P1-DRF-5 "may")

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });
const now = () => performance.now();

function problemAnswer(status, suffix, detail) {
  const body = { type: suffix ? P.PROBLEM_PREFIX + suffix : 'about:blank', title: suffix || 'error', status, detail };
  return { status, type: 'application/problem+json', body: Buffer.from(JSON.stringify(body)) }; // P1-ERR-1
}

/** The draft model: row t of the V x V table holds the logits after token t (bigram closed form). */
class DraftModel {
  constructor(info) {
    this.digest = Buffer.from(info.model_sha256, 'hex');
    this.tokenizer = Buffer.from(info.tokenizer_sha256, 'hex');
    this.vocab = info.vocab_size;
    const table = fs.readFileSync(info.logits);
    if (table.length !== 8 * this.vocab * this.vocab) throw new Error(`${info.logits} is not V x V binary64`);
    this.rows = [];
    for (let t = 0; t < this.vocab; t += 1) {
      const row = new Float64Array(this.vocab);
      for (let k = 0; k < this.vocab; k += 1) row[k] = table.readDoubleLE(8 * (t * this.vocab + k));
      this.rows.push(row);
    }
  }

  logitsAfter(context) {
    return this.rows[context[context.length - 1]];
  }
}

/** One assigned session: what the drafter last learned (§6.2) and its estimates. */
class Session {
  constructor(a, prompt, committedTokens, digests) {
    Object.assign(this, {
      id: a.session, epoch: a.epoch, contract: a.contract, verifier: a.verifier.endsWith('/') ? a.verifier : `${a.verifier}/`,
      rule: a.contract.rule, profile: a.sampling ?? a.contract.sampling ?? {}, // §5.2: the current profile, if updated
      prompt, tokens: committedTokens, digests, round: a.round,
      limit: Math.max(1, Math.min(a.contract.m_max, a.m_init)), // §6.2: m_init before the first verdict
      active: true, alpha: 0.8, tDraftMs: 0.05, tVerifyMs: 5,
    });
  }

  get committed() { return this.tokens.length; }

  get digest() { return this.digests[this.tokens.length]; }

  context() { return this.prompt.concat(this.tokens); }
}

class Drafter {
  constructor(config) {
    this.config = config;
    this.base = new URL(config.base_uri).pathname.replace(/\/$/, '');
    this.model = new DraftModel(config.model);
    this.origins = new Origins({ cert: config.cert, key: config.key, ca: config.ca }, config.call_timeout_ms);
    this.sessions = new Map(); // session id (hex) -> Session, kept after it stops (its epoch is still held)
    this.acceptEwma = null; // P1-DRF-8: EWMA of a/M over this instance's verdicts
    this.reporting = false;
    this.cacheRttMs = 2; // EWMA of the MLC's round trip (a small request), in ms
  }

  call(method, uri, { body = null, headers = {}, timeoutMs } = {}) {
    return this.origins.request(method, uri, body, headers, timeoutMs);
  }

  // ---------------------------------------------------------------------------------------------- assignments

  async handle(method, path, body, peer) {
    try {
      if (path !== `${this.base}/assignments`) return problemAnswer(404, null, `no resource at ${path}`);
      if (method !== 'POST') return problemAnswer(405, null, `${method} is not allowed on assignments`);
      return await this.assign(body, peer);
    } catch (error) {
      if (error instanceof P.ProtocolError) return problemAnswer(error.status, error.suffix, error.message);
      console.error(error);
      return problemAnswer(500, null, `internal error: ${error.message}`);
    }
  }

  async assign(body, peer) {
    // P1-DRF-1: only the configured routers may assign.
    if (!this.config.routers.includes(peer)) throw new P.ProtocolError('notAssigned', `${peer} is not a router of this drafter`);
    const a = P.parseAssignment(body); // 400 sdcp-bad-message, 422 sdcp-bad-contract (§4.1, P1-MSG-2)
    const { contract } = a;
    if (a.m_init < 1) throw new P.ProtocolError('badMessage', 'm_init 0 (P1-DRF-2)');
    if (contract.drafters && !contract.drafters.some((d) => d.equals(this.model.digest))) {
      throw new P.ProtocolError('badContract', "the contract's drafters do not permit this drafter's model (P1-DRF-3)");
    }
    if (!contract.tokenizer.equals(this.model.tokenizer)) throw new P.ProtocolError('badContract', 'another tokenizer (P1-DRF-3)');
    if (contract.rule !== 1 && contract.rule !== 2) throw new P.ProtocolError('badContract', `rule ${contract.rule} is not registered (§6.4)`);
    if (contract.m_max < 1) throw new P.ProtocolError('badContract', 'm_max 0 (P1-CTL-4)');
    const key = a.session.toString('hex');
    const held = this.sessions.get(key);
    if (held && a.epoch < held.epoch) { // P1-DRF-7
      throw new P.ProtocolError('staleEpoch', `epoch ${a.epoch} is below the held epoch ${held.epoch}`);
    }
    const prompt = typeof a.prompt === 'string' ? await this.tokenList(a.prompt, 'prompt') : a.prompt;
    if (!prompt.length) throw new P.ProtocolError('badMessage', 'empty prompt');
    if (prompt.some((t) => t >= this.model.vocab)) throw new P.ProtocolError('badMessage', 'a prompt token is outside the vocabulary');
    // §6.9: "The new drafter starts from the committed prefix in the assignment": its tokens come from
    // committed_tokens (P1-RTR-3), else from the verifier's output; either must reproduce the digest (§4.2).
    const d0 = P.prefixDigest(P.contractDigest(contract), prompt);
    let committed = [];
    if (a.committed > 0 && a.committed_tokens !== undefined) committed = (await this.tokenList(a.committed_tokens, 'committed_tokens')).slice(0, a.committed);
    let digests = [d0, ...P.chain(d0, committed)];
    if (committed.length !== a.committed || !digests[a.committed].equals(a.digest)) {
      committed = await this.readOutput(a.verifier.endsWith('/') ? a.verifier : `${a.verifier}/`, a.session, a.epoch, 0, a.committed);
      digests = committed ? [d0, ...P.chain(d0, committed)] : [];
      if (!committed || !digests[a.committed].equals(a.digest)) {
        throw new P.ProtocolError('badMessage', 'the committed prefix of the assignment does not reproduce its digest (§4.2)');
      }
    }
    const current = this.sessions.get(key); // another assignment may have arrived while the tokens were read
    if (current && a.epoch < current.epoch) throw new P.ProtocolError('staleEpoch', `epoch ${a.epoch} is below the held epoch ${current.epoch}`);
    if (current) current.active = false; // P1-DRF-7: an equal or higher epoch replaces it, abandoning its proposal
    const session = new Session(a, prompt, committed, digests);
    this.sessions.set(key, session);
    setImmediate(() => this.run(session).catch((error) => { console.error(error); session.active = false; }));
    return { status: 204, type: null, body: Buffer.alloc(0) };
  }

  async tokenList(uri, what) {
    let reply;
    try {
      reply = await this.call('GET', uri, {});
    } catch (error) {
      throw new P.ProtocolError('badMessage', `cannot read ${what} ${uri}: ${error.message}`);
    }
    if (reply.status !== 200) throw new P.ProtocolError('badMessage', `GET ${uri} answered ${reply.status}`);
    return P.parseTokenList(reply.body, what); // P1-MLC-2
  }

  /** Committed output [from, to) of a session from its verifier (§6.7, P1-DRF-6); null if it cannot be read. */
  async readOutput(verifier, id, epoch, from, to) {
    const tokens = [];
    const deadline = now() + this.config.resync_ms;
    while (from + tokens.length < to && now() < deadline) {
      const uri = `${verifier}sessions/${P.b64url(id)}/output?from=${from + tokens.length}`; // P1-MSG-3
      let out;
      try {
        const reply = await this.call('GET', uri, { timeoutMs: this.config.output_timeout_ms });
        if (reply.status !== 200) return null;
        out = P.parseOutput(reply.body);
      } catch (error) {
        console.error(`output read failed: ${error.message}`);
        return null;
      }
      if (out.epoch < epoch || out.from !== from + tokens.length) return null; // §6.7: a lower epoch is discarded
      tokens.push(...out.tokens);
      if (out.final && from + tokens.length < to) return null;
    }
    return from + tokens.length >= to ? tokens.slice(0, to - from) : null;
  }

  // ---------------------------------------------------------------------------------------------- drafting

  /** §6.2 RECOMMENDED choice of M: the M in 1..limit maximising E[tokens per round] / (M t_d + t_v), with
   *  E = (1 - alpha^(M+1)) / (1 - alpha), or M + 1 for alpha = 1. t_d counts writing a row at the cache's
   *  bandwidth; the cache's round trip (a fixed cost of the round's one PUT) is added to t_v. */
  chooseM(s) {
    const limit = Math.max(1, Math.min(s.contract.m_max, s.limit));
    let best = 1;
    let bestRate = -Infinity;
    for (let m = 1; m <= limit; m += 1) {
      const expected = s.alpha >= 1 ? m + 1 : (1 - s.alpha ** (m + 1)) / (1 - s.alpha);
      const rate = expected / (m * s.tDraftMs + s.tVerifyMs + (s.rule === 2 ? this.cacheRttMs : 0));
      if (rate > bestRate) { best = m; bestRate = rate; }
    }
    return best;
  }

  /** M tokens after the committed prefix. Rule 1: the draft model's greedy tokens, no rows (P1-DRF-4). Rule 2:
   *  each token drawn from its row of the draft distribution under the current profile, as published
   *  (binary32, §5.2), with the drafter's own CSPRNG (§6.4). */
  draft(s, m) {
    const context = s.context();
    const tokens = [];
    const rows = s.rule === 2 ? new Float32Array(m * this.model.vocab) : null;
    for (let i = 0; i < m; i += 1) {
      const logits = this.model.logitsAfter(context);
      let token;
      if (rows) {
        const row = rows.subarray(i * this.model.vocab, (i + 1) * this.model.vocab);
        row.set(P.distribution(logits, s.profile));
        token = P.draw(row, P.uniform());
      } else {
        token = P.argmax(logits);
      }
      tokens.push(token);
      context.push(token);
    }
    return { tokens, rows };
  }

  /** Writes q_rows to the MLC with a lease that outlives every retry of the proposal (P1-MLC-3, P1-DRF-8). */
  async publish(s, round, rows) {
    const uri = `${this.config.cache}q_rows/${P.b64url(s.id)}/e${s.epoch}-r${round}-${randomBytes(6).toString('hex')}`;
    const body = Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength); // little-endian binary32 on x86/ARM
    for (let attempt = 0; attempt < 5 && s.active; attempt += 1) {
      try {
        const reply = await this.call('PUT', uri, { body, headers: { 'sdcp-lease': String(this.config.lease_ms), 'content-type': 'application/octet-stream' } });
        if (reply.status >= 200 && reply.status < 300) return uri;
        console.error(`PUT ${uri} answered ${reply.status}`);
      } catch (error) {
        console.error(error.message);
      }
      await sleep(100 * 2 ** attempt);
    }
    return null;
  }

  /** P1-DRF-8: q_rows are deleted after the verdict; the DELETE's duration measures the cache's round trip. */
  release(uri) {
    if (!uri) return;
    const sent = now();
    this.call('DELETE', uri, {}).then(() => { this.cacheRttMs = (1 - EWMA) * this.cacheRttMs + EWMA * (now() - sent); }, () => {});
  }

  statusMember() {
    const active = [...this.sessions.values()].filter((s) => s.active).length;
    const status = { instance: this.config.base_uri, role: 1, load: Math.min(100, Math.round((100 * active) / this.config.capacity)), queue: 0, ttl_ms: this.config.status_ttl_ms };
    if (this.acceptEwma !== null) status.accept_milli = Math.min(1000, Math.max(0, Math.round(1000 * this.acceptEwma)));
    return status;
  }

  /** One session's rounds until it stops or is replaced (§6.2: one outstanding proposal per session). */
  async run(s) {
    let redrafts = 0;
    while (s.active) {
      const round = s.round + 1; // §6.2: the last verdict's round plus one
      const m = this.chooseM(s);
      const started = now();
      const { tokens, rows } = this.draft(s, m);
      const drafted = now();
      const qRows = rows ? await this.publish(s, round, rows) : null;
      if (rows && !qRows) { s.active = false; break; }
      const writeMs = rows ? Math.max(0, now() - drafted - this.cacheRttMs) : 0; // time for the bytes, not the trip
      s.tDraftMs = (1 - EWMA) * s.tDraftMs + EWMA * ((drafted - started + writeMs) / m);
      if (!s.active) { this.release(qRows); break; }
      const proposal = {
        session: s.id, epoch: s.epoch, round, drafter: this.config.base_uri, base: s.committed, base_digest: s.digest,
        tokens, q_rows: qRows ?? undefined, status: this.statusMember(),
      };
      const body = P.encode(proposal); // encoded once: every retry is the identical body (P1-DRF-5)
      const outcome = await this.propose(s, body);
      this.release(qRows);
      if (!s.active) break; // replaced meanwhile: the outcome belongs to an abandoned proposal
      if (outcome.kind === 'verdict') {
        redrafts = 0;
        s.tVerifyMs = (1 - EWMA) * s.tVerifyMs + EWMA * outcome.elapsedMs;
        const v = outcome.verdict;
        if (!this.onVerdict(s, m, v) && s.active) await this.resync(s, { round: v.round, committed: v.committed, digest: v.digest });
      } else if (outcome.kind === 'stale-base') {
        await this.resync(s, outcome.state);
      } else if (outcome.kind === 'q-unavailable' && redrafts < Q_REDRAFTS) {
        redrafts += 1; // P1-DRF-5: no verdict for the round, so it is drafted and published again
      } else {
        console.error(`session ${P.b64url(s.id)} round ${round}: ${outcome.kind}, stopping`);
        s.active = false; // a 4xx is final (P1-DRF-5, §5.1 by class); so is giving up after the retry window
      }
    }
  }

  /** Sends a proposal until it gets an answer that is not lost (§6.9, P1-DRF-5): a transport error, a timeout,
   *  a 5xx or a 429 is retried with the identical body and backoff, for retry_window_ms or until the session is
   *  replaced. */
  async propose(s, body) {
    const first = now();
    let backoff = this.config.backoff_ms;
    while (s.active) {
      const sent = now();
      let reply = null;
      try {
        reply = await this.call('POST', `${s.verifier}proposals`, { body, headers: { 'content-type': MEDIA_TYPE }, timeoutMs: this.config.proposal_timeout_ms });
      } catch (error) {
        console.error(`proposal lost: ${error.message}`);
      }
      if (!s.active) return { kind: 'abandoned' };
      if (reply && reply.status >= 200 && reply.status < 300) {
        const verdict = P.parseVerdict(reply.body);
        if (verdict) return { kind: 'verdict', verdict, elapsedMs: now() - sent };
        console.error('a 2xx answer that is not a verdict: treated as lost');
      } else if (reply && reply.status >= 400 && reply.status < 500 && reply.status !== 429) {
        const { suffix, state } = P.parseProblem(reply.headers, reply.body);
        if (suffix === 'sdcp-stale-base') return { kind: 'stale-base', state };
        if (suffix === 'sdcp-q-unavailable') return { kind: 'q-unavailable' };
        return { kind: `refused ${reply.status} ${suffix}` };
      } else if (reply) {
        console.error(`proposal answered ${reply.status}: lost`);
      }
      if (now() - first > this.config.retry_window_ms) return { kind: 'gave up' };
      await sleep(backoff * (0.75 + 0.5 * Math.random()));
      backoff = Math.min(2 * backoff, this.config.max_backoff_ms);
    }
    return { kind: 'abandoned' };
  }

  /** §6.3 / §6.5: adopt the verdict's committed prefix, learn from a and M, obey the action; false if the
   *  verdict's n and d[n] are not the chain extended by its emitted tokens (the caller resynchronises). */
  onVerdict(s, m, v) {
    const a = Math.min(v.accepted, m);
    // §6.3: draft state beyond the accepted positions is discarded: the next round starts from the emitted
    // tokens, which the verdict's n and d[n] must confirm (§4.2).
    const digests = P.chain(s.digest, v.emitted);
    if (s.committed + v.emitted.length !== v.committed || !(digests.at(-1) ?? s.digest).equals(v.digest)) {
      console.error('the verdict does not extend the chain as it says: resynchronising from output');
      if (v.action !== ACTION.continue && v.action !== ACTION.reduce) s.active = false;
      return false;
    }
    s.tokens = s.tokens.concat(v.emitted);
    s.digests = s.digests.concat(digests);
    s.round = v.round;
    s.limit = Math.max(1, v.m_cap); // the next M is within min(m_max, m_cap) (§6.2, P1-CTL-1)
    // P1-DRF-8: alpha is per token (each accepted position 1, the first rejected one 0); accept_milli a/M.
    for (let i = 0; i < a; i += 1) s.alpha = (1 - EWMA) * s.alpha + EWMA;
    if (a < m) s.alpha = (1 - EWMA) * s.alpha;
    s.alpha = Math.min(0.99, Math.max(0.01, s.alpha));
    this.acceptEwma = this.acceptEwma === null ? a / m : (1 - EWMA) * this.acceptEwma + EWMA * (a / m);
    // §6.5.2: continue and reduce proceed; switch, self_decode, finish, fail stop it; an unknown action is
    // "fail" (§5.2, P1-DRF-9).
    if (v.action !== ACTION.continue && v.action !== ACTION.reduce) s.active = false;
    return true;
  }

  /** P1-DRF-6: on sdcp-stale-base, adopt the state's prefix after reading the tokens it lacks from the
   *  verifier's output and checking them against its digest; states 3, 4, 5 stop it, as does a prefix that does
   *  not check. */
  async resync(s, raw) {
    const state = raw && raw.round !== undefined && Buffer.isBuffer(raw.digest) ? raw : P.parseState(raw);
    if (!state || STOPPING_STATES.has(state.state)) { s.active = false; return; }
    const n = state.committed;
    let tokens = null;
    let digests = null;
    if (n <= s.committed && s.digests[n].equals(state.digest)) {
      tokens = s.tokens.slice(0, n);
      digests = s.digests.slice(0, n + 1);
    } else {
      for (const from of n >= s.committed ? [s.committed, 0] : [0]) {
        const read = await this.readOutput(s.verifier, s.id, s.epoch, from, n);
        if (!s.active) return;
        if (!read) continue;
        const candidate = s.tokens.slice(0, from).concat(read);
        const chained = [s.digests[0], ...P.chain(s.digests[0], candidate)];
        if (chained[n].equals(state.digest)) { tokens = candidate; digests = chained; break; }
      }
    }
    if (!tokens) {
      console.error(`session ${P.b64url(s.id)}: the output does not reproduce the state's digest; stopping`);
      s.active = false;
      return;
    }
    Object.assign(s, { tokens, digests, round: state.round });
  }

  // ---------------------------------------------------------------------------------------------- status

  /** §6.1: "Each instance reports status at intervals shorter than its ttl_ms" (PUT instances/{id}/status,
   *  {id} the unpadded base64url of the base URI, P1-RTR-1). */
  async reportStatus() {
    if (this.reporting) return;
    this.reporting = true;
    const id = Buffer.from(this.config.base_uri).toString('base64url');
    try {
      for (const router of this.config.routers) {
        const reply = await this.call('PUT', `${router}instances/${id}/status`, { body: P.encode(this.statusMember()), headers: { 'content-type': MEDIA_TYPE }, timeoutMs: this.config.status_timeout_ms });
        if (reply.status < 200 || reply.status >= 300) console.error(`status report answered ${reply.status}`);
      }
    } catch (error) {
      console.error(`status report failed: ${error.message}`);
    } finally {
      this.reporting = false;
    }
  }
}

function main() {
  const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const tls = { cert: fs.readFileSync(config.cert), key: fs.readFileSync(config.key), ca: fs.readFileSync(config.ca) };
  const drafter = new Drafter({ ...config, ...tls });
  const server = secureServer(tls);
  server.on('stream', (stream, headers) => {
    const chunks = [];
    let size = 0;
    stream.on('error', () => {});
    stream.on('data', (chunk) => {
      size += chunk.length;
      if (size > 16 << 20 && !stream.headersSent) { stream.respond({ ':status': 413 }); stream.end(); } // P1-MSG-2
      else chunks.push(chunk);
    });
    stream.on('end', async () => {
      if (stream.headersSent) return;
      const path = decodeURIComponent((headers[':path'] || '/').split('?')[0]);
      const answer = await drafter.handle(headers[':method'], path, Buffer.concat(chunks), peerIdentity(stream.session));
      if (stream.destroyed || stream.closed) return;
      const head = { ':status': answer.status };
      if (answer.type) Object.assign(head, { 'content-type': answer.type, 'content-length': answer.body.length });
      stream.respond(head, { endStream: !answer.body.length });
      if (answer.body.length) stream.end(answer.body);
    });
  });
  const status = setInterval(() => drafter.reportStatus(), config.status_ttl_ms / 3);
  listen(server, {
    baseUri: config.base_uri, host: config.host, listening: () => drafter.reportStatus(), graceMs: 1000,
    stopping: () => {
      clearInterval(status);
      for (const s of drafter.sessions.values()) s.active = false;
      drafter.origins.close();
    },
  });
}

main();
