// A fast stand-in SDCP verifier on Node.js's HTTP/2 (nghttp2): the verifier resources of draft §5.1 Table 1
// for closed-form bigram target models, over TLS 1.3 with mutual certificates (P1-TLS-1).
//
// Run by tests/standins/standin_node.py, which passes the configuration (certificates, base URI,
// router, the models' logits tables) in $SDCP_STANDIN_CONFIG. Prints "serving <base URI>" once it listens;
// SIGTERM or SIGINT stops it.
//
// Why it exists (issue 16): to measure how fast the harness drives rounds, the verifier under test must cost
// next to nothing. A verifier in Python spends as much per round on HTTP/2 as the harness does, so it, not
// the harness, sets the pace; this one leaves the machine to the harness.

import fs from 'node:fs';
import * as P from './protocol.js';
import { Origins, appendRecord, getObject, readLog } from './links.js';
import { PHASE, Session } from './session.js';
import { listen, peerIdentity, secureServer } from './node_common/server.js';

const MEDIA_TYPE = 'application/sdcp+cbor';

const problem = (error) => ({ status: error.status, body: P.problemBody(error), type: 'application/problem+json' });

const plainProblem = (status, detail) => problem(new P.HttpError(status, detail));

const ok = (message, status = 200) => ({ status, body: P.encode(message), type: MEDIA_TYPE });

class Waiters {
  /** Wakes everyone waiting on a session's change (a verdict, an abandoned round, an assignment). */
  constructor() { this.list = []; }

  wait(ms) {
    return new Promise((resolve) => {
      const entry = { resolve, timer: setTimeout(() => { this.list = this.list.filter((e) => e !== entry); resolve(); }, ms) };
      this.list.push(entry);
    });
  }

  wake() {
    const list = this.list;
    this.list = [];
    for (const entry of list) { clearTimeout(entry.timer); entry.resolve(); }
  }
}

class Verifier {
  constructor(config) {
    this.config = config;
    this.base = new URL(config.base_uri).pathname.replace(/\/$/, '');
    this.models = new Map(config.models.map((model) => [model.target, model]));
    this.origins = new Origins({ cert: config.cert, key: config.key, ca: config.ca }, config.call_timeout_ms);
    this.slots = new Map();
    this.inFlight = 0;
  }

  load() {
    return this.config.pinned_load ?? Math.min(100, Math.round((100 * this.inFlight) / 64));
  }

  async handle(method, path, query, body, peer) {
    try {
      if (!path.startsWith(`${this.base}/`)) return plainProblem(404, `no resource at ${path}`);
      const parts = path.slice(this.base.length + 1).split('/');
      const shape = parts.map((part, index) => (index === 1 && parts[0] === 'sessions' ? '*' : part)).join('/');
      const routes = {
        'POST sessions': () => this.open(body, peer),
        'PUT sessions/*/drafter': () => this.assign(parts[1], body, peer),
        'POST proposals': () => this.proposal(body, peer),
        'GET sessions/*/output': () => this.output(parts[1], query),
        'POST sessions/*/policy': () => this.policy(parts[1], body, peer),
      };
      const route = routes[`${method} ${shape}`];
      if (!route) {
        const known = Object.keys(routes).some((key) => key.split(' ')[1] === shape);
        return plainProblem(known ? 405 : 404, `${method} ${path} is not a verifier resource`);
      }
      return await route();
    } catch (error) {
      if (error instanceof P.ProtocolError) return problem(error);
      if (error instanceof P.HttpError) return plainProblem(error.status, error.detail);
      console.error(error);
      return plainProblem(500, `handler raised ${error.name}`);
    }
  }

  requireRouter(peer) {
    // P1-ID-2: router-only resources are accepted only from the configured routers.
    if (!this.config.routers.includes(peer)) throw new P.ProtocolError('notAssigned', `${peer} is not a router`);
  }

  slot(encoded) {
    // P1-MSG-3: {id} is the base64url of the 16-octet session id; P1-SES-1: unknown ids are 404.
    if (!/^[A-Za-z0-9_-]+$/.test(encoded) || Buffer.from(encoded, 'base64url').length !== 16) {
      throw new P.ProtocolError('badMessage', `session id ${encoded} is not 16 octets of base64url`);
    }
    const slot = this.slots.get(Buffer.from(encoded, 'base64url').toString('hex'));
    if (!slot) throw new P.HttpError(404, `no session ${encoded}`);
    return slot;
  }

  async tokens(value) {
    if (Array.isArray(value)) return value;
    let tokens;
    try {
      tokens = P.decode(await getObject(this.origins, value));
    } catch (error) {
      throw new P.ProtocolError('badMessage', `cannot read ${value}: ${error.message}`);
    }
    if (!Array.isArray(tokens) || !tokens.every((t) => (typeof t === 'number' && Number.isInteger(t) && t >= 0))) {
      throw new P.ProtocolError('badMessage', `${value} does not hold a CBOR array of uint`); // P1-MLC-2
    }
    return tokens;
  }

  // ------------------------------------------------------------------------------------------ router resources

  async open(body, peer) {
    const opening = P.parseMessage('sessionOpen', body);
    this.requireRouter(peer);
    const { contract } = opening;
    if (contract.rule !== 1 && contract.rule !== 2) throw new P.ProtocolError('badContract', `rule ${contract.rule} is not registered`);
    if (contract.m_max < 1) throw new P.ProtocolError('badContract', 'm_max 0 (P1-CTL-4)');
    const model = this.models.get(contract.target.toString('hex'));
    if (!model) throw new P.ProtocolError('badContract', "the contract's target is not this verifier's model"); // §6.1
    if (contract.tokenizer.toString('hex') !== model.tokenizer) throw new P.ProtocolError('badContract', "the contract's tokenizer is not this verifier's");
    const key = opening.session.toString('hex');
    const existing = this.slots.get(key);
    if (existing) {
      const current = existing.session;
      if (opening.epoch === current.epoch) { // P1-MSG-5
        if (!P.contractDigest(contract).equals(current.contractDigest)) throw new P.ProtocolError('badContract', 'the session exists with another contract');
        return ok(current.state(), 200);
      }
      if (!(opening.epoch > current.epoch && opening.resume)) {
        throw new P.ProtocolError('staleEpoch', `epoch ${opening.epoch} cannot replace epoch ${current.epoch}`);
      }
    }
    const prompt = await this.tokens(opening.prompt);
    const committed = opening.resume ? await this.tokens(opening.resume.committed_tokens) : [];
    const session = new Session(opening, prompt, model.vocab, committed);
    if (existing) existing.stopped = true;
    this.slots.set(key, { session, commitLog: opening.commit_log, model, changed: new Waiters(), selfDecoding: false });
    return ok(session.state(), 201);
  }

  async assign(encoded, body, peer) {
    const assignment = P.parseMessage('assignment', body);
    this.requireRouter(peer);
    const slot = this.slot(encoded);
    if (!assignment.session.equals(slot.session.session)) throw new P.ProtocolError('badMessage', "the body's session is not the path's");
    const state = slot.session.assign(assignment);
    slot.changed.wake();
    return ok(state);
  }

  async policy(encoded, body, peer) {
    const policy = P.parseMessage('policy', body);
    this.requireRouter(peer);
    const slot = this.slot(encoded);
    if (!policy.session.equals(slot.session.session)) throw new P.ProtocolError('badMessage', "the body's session is not the path's");
    return ok(slot.session.setPolicy(policy));
  }

  // ------------------------------------------------------------------------------------------ proposals

  async proposal(body, peer) {
    const proposal = P.parseMessage('proposal', body);
    const slot = this.slots.get(proposal.session.toString('hex'));
    if (!slot) throw new P.ProtocolError('notAssigned', 'unknown session'); // P1-SES-1
    const { status: _status, ...members } = proposal; // P1-IDEM-1: "identical" is equal in every member except status
    const identity = P.encode(members).toString('hex');
    const deadline = Date.now() + this.config.round_wait_ms;
    for (;;) {
      const admission = slot.session.admit(proposal, peer, identity);
      if (admission.stored) return ok(admission.stored);
      if (admission.ticket) return this.verify(slot, admission.ticket);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new P.HttpError(503, `round ${admission.wait} is still being verified`);
      await slot.changed.wait(remaining);
    }
  }

  /** p after each token under a profile: the closed form makes it a function of (model, rule, profile, token),
   *  so rows are computed once and kept. */
  targetRows(model, rule, sampling, tokens) {
    const key = `${rule}|${JSON.stringify(sampling ? Object.entries(sampling).filter(([name]) => name !== 'seed').sort() : null)}`;
    let rows = model.p.get(key);
    if (!rows) model.p.set(key, rows = new Array(model.vocab));
    return tokens.map((token) => rows[token] || (rows[token] = P.targetDistribution(model.rows[token], sampling, rule)));
  }

  async verify(slot, ticket) {
    const { session } = slot;
    let pending;
    // The commit log's first read does not depend on the verdict: it goes out with the q_rows fetch (§6.3: rows
    // "MAY" be fetched concurrently with scoring), so a round waits for two of the MLC's answers, not three.
    const log = readLog(this.origins, slot.commitLog);
    log.catch(() => {}); // a failed read is met again by the append
    this.inFlight += 1;
    try {
      let qRows = null;
      if (ticket.needsQ) {
        let blob;
        try {
          blob = await getObject(this.origins, ticket.proposal.q_rows);
        } catch (error) {
          throw new P.ProtocolError('qUnavailable', `cannot read ${ticket.proposal.q_rows}: ${error.message}`); // §6.3
        }
        qRows = P.checkQRows(blob, ticket.proposal.tokens, session.vocab);
      }
      // Scoring (§6.3) under the bigram closed form: the target's row after a token is the table's row for it,
      // so p[1..M+1] are the rows after the last committed token and after each proposed one.
      const last = session.output.length ? session.output.at(-1) : session.prompt.at(-1);
      const pRows = this.targetRows(slot.model, session.contract.rule, ticket.sampling, [last, ...ticket.proposal.tokens]);
      const uniform = this.uniforms(session, ticket.sampling, ticket.proposal.round);
      pending = session.decide(ticket, pRows, uniform, this.load(), qRows);
    } catch (error) {
      session.abandon(ticket);
      slot.changed.wake();
      throw error;
    } finally {
      this.inFlight -= 1;
    }
    await this.commit(slot, pending, ticket, log);
    return ok(pending.verdict);
  }

  uniforms(session, sampling, round) {
    const seed = sampling && sampling.seed !== undefined ? sampling.seed : undefined;
    return seed === undefined ? P.systemUniforms() : P.seededUniforms(seed, session.session, round);
  }

  async commit(slot, pending, ticket, log = undefined) {
    const { session } = slot;
    let outcome;
    try {
      outcome = await appendRecord(this.origins, slot.commitLog, pending.record, log);
    } catch (error) {
      outcome = 'failed';
    }
    if (outcome !== 'appended') {
      if (ticket) session.abandon(ticket);
      slot.changed.wake();
      if (outcome === 'fenced') {
        session.fence();
        throw new P.ProtocolError('staleEpoch', 'the commit log is fenced by a newer epoch');
      }
      throw new P.HttpError(503, 'the commit log could not be appended to');
    }
    const events = session.commit(pending);
    slot.changed.wake();
    for (const event of events) this.postEvent(event);
    if (session.phase === PHASE.selfDecoding && !slot.selfDecoding) this.selfDecode(slot);
  }

  async selfDecode(slot) {
    const { session } = slot;
    slot.selfDecoding = true;
    try {
      while (session.phase === PHASE.selfDecoding && !session.fenced && !slot.stopped) {
        if (session.selfDecodingShouldStop(this.load())) {
          this.postEvent(session.endSelfDecoding());
          slot.changed.wake();
          return;
        }
        const round = session.round + 1;
        const last = session.output.length ? session.output.at(-1) : session.prompt.at(-1);
        const sampling = session.samplingFor(round);
        const [p] = this.targetRows(slot.model, session.contract.rule, sampling, [last]);
        const pending = session.selfDecode(p, this.uniforms(session, sampling, round));
        await this.commit(slot, pending, null);
      }
    } catch (error) {
      if (!(error instanceof P.ProtocolError || error instanceof P.HttpError)) console.error(error);
    } finally {
      slot.selfDecoding = false;
    }
  }

  async postEvent(event) {
    try {
      const reply = await this.origins.request('POST', `${this.config.router}events`, P.encode(event), { 'content-type': MEDIA_TYPE });
      if (reply.status < 200 || reply.status >= 300) console.error(`event answered ${reply.status}`);
    } catch (error) {
      console.error(`event not delivered: ${error.message}`);
    }
  }

  // ------------------------------------------------------------------------------------------ output, status

  async output(encoded, query) {
    const slot = this.slot(encoded);
    const values = new URLSearchParams(query).getAll('from');
    if (values.length > 1 || (values.length === 1 && !/^[0-9]+$/.test(values[0]))) {
      throw new P.ProtocolError('badMessage', `from must be one non-negative integer, got ${JSON.stringify(values)}`);
    }
    const start = values.length ? Number(values[0]) : 0;
    const deadline = Date.now() + this.config.output_wait_ms;
    for (;;) {
      const out = slot.session.outputFrom(start);
      if (out) return ok(out);
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        const { session } = slot;
        return ok({ session: session.session, epoch: session.epoch, from: start, tokens: [], final: false }); // P1-OUT-1
      }
      await slot.changed.wait(remaining);
    }
  }

  async reportStatus() {
    // §6.1: "Each instance reports status at intervals shorter than its ttl_ms"; P1-RTR-1 names the instance.
    const status = { instance: this.config.base_uri, role: 2, load: this.load(), queue: this.inFlight, ttl_ms: this.config.status_ttl_ms };
    const id = Buffer.from(this.config.base_uri).toString('base64url');
    try {
      await this.origins.request('PUT', `${this.config.router}instances/${id}/status`, P.encode(status), { 'content-type': MEDIA_TYPE });
    } catch (error) {
      console.error(`status report failed: ${error.message}`);
    }
  }
}

function main() {
  const config = JSON.parse(process.env.SDCP_STANDIN_CONFIG);
  for (const name of ['cert', 'key', 'ca']) config[name] = fs.readFileSync(config[name]);
  for (const model of config.models) {
    const table = fs.readFileSync(model.logits); // V x V binary64, little-endian: row t is the logits after t
    model.rows = [];
    model.p = new Map();
    for (let t = 0; t < model.vocab; t += 1) {
      model.rows.push(new Float64Array(table.buffer.slice(table.byteOffset + 8 * model.vocab * t, table.byteOffset + 8 * model.vocab * (t + 1))));
    }
  }
  const verifier = new Verifier(config);
  const server = secureServer({ cert: config.cert, key: config.key, ca: config.ca }, {
    settings: { maxConcurrentStreams: 128 }, http1Detail: 'SDCP requires HTTP/2 over TLS 1.3 (P1-TLS-1)',
  });
  server.on('stream', (stream, headers) => {
    const chunks = [];
    let size = 0;
    stream.on('data', (chunk) => {
      size += chunk.length;
      if (size > 16 << 20) { stream.respond({ ':status': 413 }); stream.end(); return; } // P1-MSG-2
      chunks.push(chunk);
    });
    stream.on('error', () => {});
    stream.on('end', async () => {
      const [path, query = ''] = (headers[':path'] || '/').split('?');
      const peer = peerIdentity(stream.session);
      const answer = await verifier.handle(headers[':method'], decodeURIComponent(path), query, Buffer.concat(chunks), peer);
      if (stream.destroyed || stream.closed) return;
      stream.respond({ ':status': answer.status, 'content-type': answer.type, 'content-length': answer.body.length });
      stream.end(answer.body);
    });
  });
  const status = setInterval(() => verifier.reportStatus(), config.status_ttl_ms / 3);
  listen(server, {
    baseUri: config.base_uri, host: config.host, listening: () => verifier.reportStatus(),
    stopping: () => { clearInterval(status); verifier.origins.close(); },
  });
}

main();
