// The router role of draft-sdcp (§6.1 assignment, §6.5.2 events, §6.6 policy, §6.7 as front end, §6.8/§6.9
// fencing and failover) with the profile's decisions (P1-RTR-1..6, P1-EVT-1, P1-FRONT-1..3). Transport-free:
// server.js feeds it requests, links.js carries its calls.

import crypto from 'node:crypto';
import * as P from './protocol.js';
import { Origins, TransportError, appendFence, countedRecords, getObject, ok, problemMembers, problemType, putTokens } from './links.js';

const M_INIT = 4;                 // P1-DRF-2: the router sends max(1, min(m_max, m_init))
const FAIL_COUNT = 3;             // P1-RTR-5: "three times in a row over at least 0.5 s"
const FAIL_SPAN_MS = 500;
const FRONT_WAIT_MS = 20000;      // P1-OUT-1: the front's long poll (the harness allows 30 s)
const OUTPUT_TIMEOUT_MS = 35000;  // a verifier's long poll may take 30 s (P1-OUT-1)
const RETRY_MS = 200;             // backoff between retries of a failed call
const FENCE_ATTEMPTS = 150;       // about 30 s of retries before a session whose log cannot be fenced fails
const ACTIVE = 'active', SELF = 'self-decoding', FAILING_OVER = 'failing-over', FINISHED = 'finished', FAILED = 'failed';

/** Wakes everyone waiting on a session's change (a failover done, an output read, an end). */
class Waiters {
  constructor() { this.list = []; }
  wait(ms) {
    return new Promise((resolve) => {
      const entry = { resolve, timer: setTimeout(() => { this.list = this.list.filter((e) => e !== entry); resolve(); }, Math.max(0, ms)) };
      this.list.push(entry);
    });
  }
  wake() {
    const list = this.list;
    this.list = [];
    for (const entry of list) { clearTimeout(entry.timer); entry.resolve(); }
  }
}

const ended = (s) => s.phase === FINISHED || s.phase === FAILED;

export class Router {
  /** config: {base_uri, cache, verifiers: [uri], drafters: [{uri, model (hex)}], tls: {cert, key, ca}, call_timeout_ms} */
  constructor(config) {
    this.config = config;
    this.origins = new Origins(config.tls, config.call_timeout_ms, P.MEDIA_TYPE);
    this.instances = new Map();
    for (const uri of config.verifiers) this.instances.set(uri, { uri, role: 2, expiresAt: 0, failures: 0, firstFailure: 0 });
    for (const { uri, model } of config.drafters) this.instances.set(uri, { uri, role: 1, model, expiresAt: 0, failures: 0, firstFailure: 0 });
    this.sessions = new Map(); // hex id -> session
  }

  log(...args) { console.error(new Date().toISOString(), ...args); }

  // ------------------------------------------------------------------------------------------ instances

  /** PUT instances/{id}/status (§5.1 Table 1, P1-RTR-1, P1-RTR-2). */
  status(encodedId, body, peer) {
    const status = P.parse('status', body);
    if (!/^[A-Za-z0-9_-]+$/.test(encodedId) || Buffer.from(encodedId, 'base64url').toString('utf8') !== status.instance) {
      throw new P.ProtocolError('badMessage', 'the path {id} is not the base64url of the status\'s instance (P1-RTR-1)');
    }
    // P1-RTR-2: "It accepts a status report only from the instance it names ... (else 403)".
    if (peer !== status.instance) throw new P.ProtocolError('notAssigned', `${peer} may not report status for ${status.instance}`);
    const instance = this.instances.get(status.instance);
    if (!instance) return; // not configured: never eligible, nothing to record
    const wasEligible = this.eligible(instance);
    Object.assign(instance, { load: status.load, queue: status.queue, accept: status.accept_milli ?? 500 });
    instance.expiresAt = Date.now() + status.ttl_ms;
    clearTimeout(instance.timer);
    instance.timer = setTimeout(() => this.expired(instance), status.ttl_ms + 5);
    instance.timer.unref();
    if (instance.role === 1 && !wasEligible) {
      // A drafter became eligible: sessions left without one get it now (P1-RTR-2).
      for (const s of this.sessions.values()) if (s.needsDrafter && s.phase === ACTIVE) this.serially(s, () => this.assign(s));
    }
  }

  eligible(instance) { return instance.expiresAt > Date.now(); }

  /** §6.1 "The router MUST NOT assign sessions to an instance whose status has expired"; §6.9 on expiry. */
  expired(instance) {
    if (this.eligible(instance)) return;
    if (instance.role === 2) { this.verifierFailed(instance.uri, 'its status expired'); return; }
    // §6.9 Drafter failure: "when a drafter's status expires, the router reassigns its sessions".
    for (const s of this.sessions.values()) {
      if (s.drafter === instance.uri && s.phase === ACTIVE) {
        this.log(`drafter ${instance.uri} expired: reassigning ${s.hex}`);
        this.serially(s, () => this.assign(s, instance.uri));
      }
    }
  }

  /** P1-RTR-5: transport error, 404 or 5xx count towards a verifier's failure; any other answer resets. */
  noteOutcome(uri, failed) {
    const instance = this.instances.get(uri);
    if (!instance) return;
    if (!failed) { instance.failures = 0; return; }
    const now = Date.now();
    if (instance.failures === 0) instance.firstFailure = now;
    instance.failures += 1;
    if (instance.failures >= FAIL_COUNT && now - instance.firstFailure >= FAIL_SPAN_MS) {
      this.verifierFailed(uri, `${instance.failures} failures in a row over ${now - instance.firstFailure} ms`);
    }
  }

  isFailing(uri) { return (this.instances.get(uri)?.failures ?? 0) >= FAIL_COUNT; }

  verifierFailed(uri, why) {
    for (const s of this.sessions.values()) {
      if (s.verifier === uri && !ended(s) && s.phase !== FAILING_OVER && !s.failoverQueued) {
        this.log(`verifier ${uri} failed (${why}): failing over ${s.hex}`);
        s.failoverQueued = true;
        const epoch = s.epoch;
        this.serially(s, () => this.failover(s, uri, epoch));
      }
    }
  }

  /** Eligible instances of a role, best first: unexpired (P1-RTR-2), not failing, low load and queue, high
   *  acceptance (§6.1's example of a local selection policy). */
  ranked(role, filter = () => true) {
    return [...this.instances.values()]
      .filter((i) => i.role === role && this.eligible(i) && filter(i))
      .sort((a, b) => (this.isFailing(a.uri) - this.isFailing(b.uri)) || (a.load - b.load) || (a.queue - b.queue) || (b.accept - a.accept));
  }

  permitted(contract, instance) {
    // §4.1: "An absent drafters member permits any draft model that the router's local policy allows."
    return !contract.drafters || contract.drafters.some((d) => Buffer.from(d).toString('hex') === instance.model);
  }

  // ------------------------------------------------------------------------------------------ sessions

  /** Runs ``fn`` after everything queued for the session (assignments, failovers, policies never interleave,
   *  so an assignment always carries the state of the PUT just before it, P1-RTR-3). */
  serially(s, fn) {
    const run = s.queue.then(fn);
    s.queue = run.catch((error) => { this.log(`session ${s.hex}: ${error.stack || error.message}`); });
    return run;
  }

  session(id) {
    const s = this.sessions.get(id.toString('hex'));
    if (!s) throw new P.HttpError(404, 'no such session');
    return s;
  }

  /** The verifier's GET output?from=n; returns the checked output or throws (counting failures). */
  async readOutput(s, verifier, from, timeoutMs) {
    let reply;
    try {
      reply = await this.origins.request('GET', `${verifier}sessions/${P.b64url(s.id)}/output?from=${from}`, null, {}, timeoutMs);
    } catch (error) {
      this.noteOutcome(verifier, true);
      throw error;
    }
    this.noteOutcome(verifier, reply.status === 404 || reply.status >= 500);
    if (!ok(reply)) throw new TransportError(`output answered ${reply.status}`);
    const out = P.tryParse('output', reply.body);
    if (!out) throw new TransportError('the output is malformed');
    return out;
  }

  /** Extends the session's committed tokens (read from its verifier) to at least ``n`` and checks them
   *  against ``digest`` (§4.2). */
  async tokensUpTo(s, n, digest) {
    for (let tries = 0; s.tokens.length < n; tries += 1) {
      if (tries > 20) throw new TransportError(`could not read ${n} committed tokens`);
      const out = await this.readOutput(s, s.verifier, s.tokens.length, this.config.call_timeout_ms);
      if (out.epoch === s.epoch && out.from === s.tokens.length) s.tokens.push(...out.tokens);
    }
    const tokens = s.tokens.slice(0, n);
    if (!P.extendDigest(s.d0, tokens).equals(Buffer.from(digest))) throw new TransportError(`the ${n} committed tokens do not match the digest`);
    return tokens;
  }

  /** A committed_tokens object for the first ``n`` tokens (P1-RTR-3: always sent when committed > 0). */
  async tokensRef(s, n) {
    if (s.tokensRef && s.tokensRef.n === n) return s.tokensRef.uri;
    const uri = await putTokens(this.origins, this.config.cache, s.id, s.tokens.slice(0, n));
    s.tokensRef = { n, uri };
    return uri;
  }

  assignmentBody(s, drafter, state, tokensUri) {
    const body = {
      session: s.id, epoch: s.epoch, contract: s.contract, verifier: s.verifier, drafter, prompt: s.prompt,
      round: state.round, committed: state.committed, digest: state.digest,
      m_init: Math.max(1, Math.min(s.contract.m_max, M_INIT)),
    };
    if (state.committed > 0) body.committed_tokens = tokensUri;
    if (s.sampling) body.sampling = s.sampling; // §6.6: the latest accepted profile in every later assignment
    return body;
  }

  /** §6.1: choose a permitted, eligible drafter; "It first informs the verifier with PUT sessions/{id}/drafter,
   *  and then sends the assignment, carrying the current round, committed length, and digest, to the drafter."
   *  ``avoid``: the drafter being replaced (switch, expiry), taken only if no other is eligible (P1-RTR-5). */
  async assign(s, avoid = null) {
    clearTimeout(s.retryTimer);
    if (s.phase !== ACTIVE) return;
    const refused = new Set();
    for (;;) {
      const permitted = this.ranked(1, (i) => this.permitted(s.contract, i) && !refused.has(i.uri));
      const choice = permitted.find((i) => i.uri !== avoid) || permitted[0];
      if (!choice) { s.needsDrafter = true; s.drafter = null; return; }
      const drafter = choice.uri;
      // The PUT carries the router's last known state and its tokens (P1-RTR-3).
      const putBody = this.assignmentBody(s, drafter, s.known, s.known.committed > 0 ? await this.tokensRef(s, s.known.committed) : null);
      let reply;
      try {
        reply = await this.origins.request('PUT', `${s.verifier}sessions/${P.b64url(s.id)}/drafter`, P.encode(putBody));
      } catch (error) {
        reply = null;
      }
      this.noteOutcome(s.verifier, !reply || reply.status === 404 || reply.status >= 500);
      if (!reply || reply.status === 404 || reply.status >= 500) {
        // The verifier may be failing (P1-RTR-5): try again unless a failover takes over.
        s.needsDrafter = true;
        s.retryTimer = setTimeout(() => { if (s.needsDrafter && s.phase === ACTIVE) this.serially(s, () => this.assign(s, avoid)); }, RETRY_MS);
        return;
      }
      if (reply.status === 410) { this.end(s, FAILED, s.known.committed, 'the verifier closed the session'); return; }
      if (!ok(reply)) { this.log(`PUT …/drafter answered ${reply.status} ${reply.body}`); s.needsDrafter = true; return; }
      const state = P.tryParse('state', reply.body);
      if (!state) { this.log('PUT …/drafter answered no session-state'); s.needsDrafter = true; return; }
      s.maxRound = Math.max(s.maxRound, state.round);
      // P1-RTR-3: "the assignment sent to the drafter carries the values of the session-state that PUT returned".
      await this.tokensUpTo(s, state.committed, state.digest);
      s.known = { round: state.round, committed: state.committed, digest: state.digest };
      const tokensUri = state.committed > 0 ? await this.tokensRef(s, state.committed) : null;
      if (!this.eligible(choice)) { refused.add(drafter); continue; } // expired meanwhile (§6.1 MUST NOT)
      let sent;
      try {
        sent = await this.origins.request('POST', `${drafter}assignments`, P.encode(this.assignmentBody(s, drafter, state, tokensUri)));
      } catch (error) {
        sent = null;
      }
      if (sent && ok(sent)) {
        s.drafter = drafter;
        s.needsDrafter = false;
        return;
      }
      this.log(`drafter ${drafter} refused the assignment: ${sent ? sent.status : 'no answer'}`);
      refused.add(drafter);
    }
  }

  /** §6.9 Verifier failure, P1-RTR-6: fence {epoch: E+1} first, then resume at another verifier from the last
   *  counted record, then inform it of a drafter and send a new assignment. */
  async failover(s, failedVerifier, epoch) {
    s.failoverQueued = false;
    if (ended(s) || s.verifier !== failedVerifier || s.epoch !== epoch) return;
    const newEpoch = epoch + 1;
    s.phase = FAILING_OVER;
    s.minEpoch = newEpoch; // from now on the front discards output of the old epoch (§6.7, §6.9)
    s.drafter = null;
    s.changed.wake();
    let records;
    for (let attempt = 1; !records; attempt += 1) {
      try { records = await appendFence(this.origins, s.commitLog, newEpoch); } catch (error) {
        this.log(`fence ${newEpoch} for ${s.hex}: ${error.message}; retrying`);
        if (attempt >= FENCE_ATTEMPTS) { this.end(s, FAILED, s.known.committed, 'the fence could not be appended'); return; }
        await s.changed.wait(RETRY_MS);
      }
    }
    s.epoch = newEpoch;
    const { last, tokens } = countedRecords(records);
    if (last && (tokens.length !== last.committed || !P.extendDigest(s.d0, tokens).equals(last.digest))) {
      this.end(s, FAILED, s.known.committed, 'the commit log does not match its own digests (P1-RTR-6)');
      return;
    }
    const resume = last ? { round: last.round, committed: last.committed, digest: last.digest } : { round: 0, committed: 0, digest: s.d0 };
    let tokensUri;
    for (;;) {
      try { tokensUri = await putTokens(this.origins, this.config.cache, s.id, tokens); break; } catch (error) {
        this.log(`committed_tokens for ${s.hex}: ${error.message}; retrying`);
        await s.changed.wait(RETRY_MS);
      }
    }
    const opening = {
      session: s.id, epoch: newEpoch, contract: s.contract, prompt: s.prompt, commit_log: s.commitLog,
      resume: { ...resume, committed_tokens: tokensUri },
    };
    for (;;) {
      if (ended(s)) return;
      for (const candidate of this.ranked(2, (i) => i.uri !== failedVerifier)) {
        const answer = await this.openAt(candidate.uri, opening);
        if (answer.ok) {
          s.verifier = candidate.uri;
          s.tokens = tokens.slice();
          s.tokensRef = { n: tokens.length, uri: tokensUri };
          s.known = resume;
          s.maxRound = Math.max(s.maxRound, resume.round);
          s.phase = ACTIVE;
          s.changed.wake();
          this.log(`session ${s.hex} resumed at ${candidate.uri}, epoch ${newEpoch}, committed ${resume.committed}`);
          await this.assign(s);
          return;
        }
      }
      await s.changed.wait(RETRY_MS * 2); // no verifier could take it now: try again (status reports revive them)
    }
  }

  /** POST sessions at one verifier: {ok, state} or {ok: false, status, type}. */
  async openAt(verifier, opening) {
    let reply;
    try {
      reply = await this.origins.request('POST', `${verifier}sessions`, P.encode(opening));
    } catch (error) {
      this.noteOutcome(verifier, true);
      return { ok: false, status: null };
    }
    this.noteOutcome(verifier, reply.status === 404 || reply.status >= 500);
    const state = ok(reply) ? P.tryParse('state', reply.body) : null;
    if (state) return { ok: true, state };
    return { ok: false, status: reply.status, type: problemType(reply) };
  }

  end(s, finish, committed, why) {
    if (ended(s)) return;
    this.log(`session ${s.hex} ends (${finish}): ${why}`);
    s.phase = finish === 4 ? FINISHED : FAILED;
    s.finish = finish;
    s.endCommitted = committed;
    s.drafter = null;
    s.needsDrafter = false;
    s.changed.wake();
  }

  // ------------------------------------------------------------------------------------------ events

  /** POST events (§5.1 Table 1, §6.5.2, P1-EVT-1); acted on after the 204. */
  event(body, peer) {
    const ev = P.parse('event', body);
    const s = this.session(ev.session);
    // P1-RTR-2: "an event only from the session's current verifier (else 403)".
    if (peer !== s.verifier) throw new P.ProtocolError('notAssigned', `${peer} is not the session's verifier`);
    if (ev.epoch !== s.epoch || ev.epoch < s.minEpoch) throw new P.ProtocolError('staleEpoch', `the session is at epoch ${s.epoch}`);
    return () => this.act(s, ev);
  }

  act(s, ev) {
    if (ended(s)) return;
    switch (ev.kind) {
      case 0: // self-decoding ended, a drafter is needed again
      case 2: // switch: another drafter with a permitted model
        if (s.phase === FAILING_OVER) return;
        s.phase = ACTIVE;
        this.serially(s, () => this.assign(s, ev.kind === 2 ? s.drafter : null));
        return;
      case 3: // self-decoding: no drafter until kind 0
        if (s.phase === FAILING_OVER) return;
        s.phase = SELF;
        s.drafter = null;
        s.needsDrafter = false;
        return;
      case 4:
      case 5:
        this.end(s, ev.kind, ev.committed, `event ${ev.kind}`);
        return;
      case 1: // reduce is the verifier's own business
        return;
      default: // §5.2: "A receiver that encounters an unknown action value MUST treat it as fail" (P1-DRF-9)
        this.end(s, 5, ev.committed, `unknown event kind ${ev.kind}`);
    }
  }

  // ------------------------------------------------------------------------------------------ the front

  /** P1-FRONT-1: POST client/sessions. */
  async frontOpen(body) {
    const request = P.parse('frontOpen', body);
    const contract = P.checkContract(request.contract);
    const id = request.session || crypto.randomBytes(16);
    const existing = this.sessions.get(id.toString('hex'));
    if (existing) {
      if (!P.contractDigest(existing.contract).equals(P.contractDigest(contract))) throw new P.ProtocolError('badContract', 'the session exists with another contract');
      return { status: 201, body: { session: id, verifier: existing.verifier, epoch: existing.epoch } };
    }
    // P1-FRONT-1: "A contract the router cannot serve (no permitted drafter, ...) gets 422".
    if (![...this.instances.values()].some((i) => i.role === 1 && this.permitted(contract, i))) {
      throw new P.ProtocolError('badContract', 'no configured drafter has a model the contract permits');
    }
    let promptTokens = request.prompt;
    if (typeof request.prompt === 'string') {
      const object = await getObject(this.origins, request.prompt).catch(() => null);
      promptTokens = object ? P.tokenList(object.data) : null;
      if (!promptTokens || !promptTokens.length) throw new P.ProtocolError('badMessage', `${request.prompt} holds no token list`);
    }
    const commitLog = `${this.config.cache}sdcp-router/${id.toString('hex')}/commit-log-${crypto.randomBytes(6).toString('hex')}`;
    // §6.1: "The router selects a verifier and sends session-open with epoch 1 and a commit_log reference".
    const opening = { session: id, epoch: 1, contract, prompt: request.prompt, commit_log: commitLog };
    const candidates = this.ranked(2);
    if (!candidates.length) throw new P.HttpError(503, 'no verifier has an unexpired status (P1-RTR-2)');
    let refusals = 0;
    for (const candidate of candidates) {
      const answer = await this.openAt(candidate.uri, opening);
      if (!answer.ok) {
        if (answer.status === 422) refusals += 1;
        continue;
      }
      const d0 = P.prefixDigest(P.contractDigest(contract), promptTokens);
      if (!d0.equals(Buffer.from(answer.state.digest))) this.log(`session ${id.toString('hex')}: the verifier's d[0] differs from ours`);
      const s = {
        id, hex: id.toString('hex'), contract, prompt: request.prompt, d0, commitLog, epoch: 1, minEpoch: 1,
        verifier: candidate.uri, drafter: null, phase: ACTIVE, finish: null, endCommitted: 0,
        known: { round: answer.state.round, committed: answer.state.committed, digest: Buffer.from(answer.state.digest) },
        maxRound: answer.state.round, tokens: [], tokensRef: null, sampling: null, needsDrafter: true,
        failoverQueued: false, queue: Promise.resolve(), changed: new Waiters(),
      };
      this.sessions.set(s.hex, s);
      this.serially(s, () => this.assign(s));
      return { status: 201, body: { session: id, verifier: s.verifier, epoch: s.epoch } };
    }
    if (refusals === candidates.length) throw new P.ProtocolError('badContract', 'every verifier refused the contract (no verifier for its target)');
    throw new P.HttpError(503, 'no verifier accepted the session-open');
  }

  /** P1-FRONT-2: GET client/sessions/{id}. */
  describe(id) {
    const s = this.session(id);
    return { verifier: s.verifier, epoch: s.epoch, phase: s.phase };
  }

  /** P1-FRONT-2: GET client/sessions/{id}/output?from=n — §6.7's front end: stable indices, never an output of
   *  an epoch lower than one seen, waiting like the verifier's output, ending with final and finish. */
  async frontOutput(id, from) {
    const s = this.session(id);
    const deadline = Date.now() + FRONT_WAIT_MS;
    const output = (tokens, final = false) => {
      const out = { session: s.id, epoch: s.epoch, from, tokens, final };
      if (final) out.finish = s.finish;
      return out;
    };
    for (;;) {
      if (from < s.tokens.length) return output(s.tokens.slice(from)); // already read, at these indices
      if (ended(s) && from >= s.endCommitted) return output([], true);
      if (Date.now() >= deadline) return output([]);
      if (s.phase === FAILING_OVER) { await s.changed.wait(deadline - Date.now()); continue; }
      const verifier = s.verifier;
      const epoch = s.epoch;
      let out;
      try {
        out = await this.readOutput(s, verifier, from, OUTPUT_TIMEOUT_MS);
      } catch (error) {
        await s.changed.wait(Math.min(RETRY_MS, deadline - Date.now()));
        continue;
      }
      // §6.7: "a front end that receives output with a lower epoch than one it has seen discards it".
      if (out.epoch < s.minEpoch || out.epoch < s.epoch || s.epoch !== epoch || s.verifier !== verifier) continue;
      if (out.from <= s.tokens.length && out.from + out.tokens.length > s.tokens.length) {
        s.tokens.push(...out.tokens.slice(s.tokens.length - out.from));
      }
      if (out.final) {
        if (!ended(s)) this.end(s, out.finish ?? 5, out.from + out.tokens.length, 'the verifier\'s output is final');
        return { ...output(out.tokens, true), finish: out.finish ?? s.finish };
      }
      if (out.tokens.length) return output(out.tokens);
    }
  }

  /** P1-FRONT-3: POST client/sessions/{id}/policy; §6.6 and P1-RTR-4: from_round = the highest round known + 1,
   *  after a 409 state.round + 1. */
  frontPolicy(id, body) {
    const { sampling } = P.parse('frontPolicy', body);
    const s = this.session(id);
    return this.serially(s, async () => {
      if (ended(s)) throw new P.ProtocolError('sessionClosed', 'the session has ended');
      let fromRound = s.maxRound + 1;
      for (let attempt = 0; attempt < 5; attempt += 1) {
        let reply;
        try {
          reply = await this.origins.request('POST', `${s.verifier}sessions/${P.b64url(s.id)}/policy`, P.encode({ session: s.id, from_round: fromRound, sampling }));
        } catch (error) {
          this.noteOutcome(s.verifier, true);
          throw new P.HttpError(503, `the verifier did not answer the policy: ${error.message}`);
        }
        this.noteOutcome(s.verifier, reply.status === 404 || reply.status >= 500);
        if (ok(reply)) {
          s.sampling = sampling;
          const state = P.tryParse('state', reply.body);
          if (state) s.maxRound = Math.max(s.maxRound, state.round);
          return { from_round: fromRound };
        }
        const type = problemType(reply);
        const round = Number(problemMembers(reply)?.state?.round);
        if (reply.status === 409 && type === 'sdcp-stale-base' && Number.isInteger(round)) {
          s.maxRound = Math.max(s.maxRound, round);
          fromRound = round + 1;
          continue;
        }
        if (reply.status === 410) throw new P.ProtocolError('sessionClosed', 'the verifier closed the session');
        throw new P.HttpError(502, `the verifier refused the policy: ${reply.status} ${type}`);
      }
      throw new P.HttpError(503, 'the verifier kept moving on; policy not applied');
    });
  }

  close() {
    for (const instance of this.instances.values()) clearTimeout(instance.timer);
    this.origins.close();
  }
}
