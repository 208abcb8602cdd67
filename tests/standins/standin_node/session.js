// One session as the stand-in verifier keeps it (§6.1, §6.3–§6.9): every decision about a request, no I/O.
// The server brings in the draft rows, the target logits, the uniforms and the load, and carries the commit
// record out; nothing is visible to anyone before the record was appended (§6.3 Commit).

import * as P from './protocol.js';

const PHASE = { active: 0, selfDecoding: 3, finished: 4, failed: 5 }; // P1-STATE-1

class Session {
  constructor(opening, prompt, vocab, committedOutput = []) {
    this.session = opening.session;
    this.epoch = opening.epoch;
    this.contract = opening.contract;
    this.contractDigest = P.contractDigest(opening.contract);
    this.vocab = vocab;
    if (!prompt.length || prompt.some((token) => token >= vocab)) {
      throw new P.ProtocolError('badMessage', 'the prompt is empty or leaves the vocabulary'); // P1-SES-1
    }
    this.prompt = prompt;
    this.d0 = P.prefixDigest(this.contractDigest, prompt);
    this.output = [...committedOutput];
    this.digest = P.extendDigest(this.d0, this.output);
    this.round = opening.resume ? opening.resume.round : 0;
    if (opening.resume && (opening.resume.committed !== this.output.length || !opening.resume.digest.equals(this.digest))) {
      throw new P.ProtocolError('badMessage', 'resume does not match its committed_tokens');
    }
    this.phase = this.output.length >= this.contract.max_new && this.output.length ? PHASE.finished : PHASE.active;
    this.fenced = false;
    this.drafter = null;
    this.control = new P.SpeculationControl(this.contract);
    this.verdicts = new Map();
    this.inFlight = null;
    this.policies = [];
    this.selfDecodedInPeriod = 0;
  }

  get closed() {
    return this.phase === PHASE.finished || this.phase === PHASE.failed;
  }

  state() {
    return { session: this.session, epoch: this.epoch, round: this.round, committed: this.output.length,
      digest: this.digest, state: this.phase };
  }

  staleBase(detail) {
    return new P.ProtocolError('staleBase', detail, this.state()); // P1-ERR-2: with the current state
  }

  requireServing() {
    // §6.3: after a fenced append the verifier stops serving the session; every request gets stale-epoch.
    if (this.fenced) throw new P.ProtocolError('staleEpoch', 'this verifier was fenced off the session');
  }

  requireOpen() {
    if (this.closed) throw new P.ProtocolError('sessionClosed', 'the session has ended'); // P1-CTL-3
  }

  requireEpoch(epoch) {
    if (epoch !== this.epoch) throw new P.ProtocolError('staleEpoch', `epoch ${epoch} is not ${this.epoch}`);
  }

  // -------------------------------------------------------------------------------------- router resources

  assign(assignment) {
    this.requireServing();
    this.requireEpoch(assignment.epoch);
    this.requireOpen();
    if (assignment.m_init < 1) throw new P.ProtocolError('badMessage', 'm_init must be at least 1 (P1-DRF-2)');
    this.control.onAssignment(assignment.m_init);
    this.drafter = assignment.drafter;
    if (this.phase === PHASE.selfDecoding) this.phase = PHASE.active; // the router's choice wins
    return this.state();
  }

  setPolicy(policy) {
    this.requireServing();
    this.requireOpen();
    if (policy.from_round <= this.round) {
      throw this.staleBase(`from_round ${policy.from_round} is not above the current round ${this.round}`);
    }
    this.policies.push(policy);
    return this.state();
  }

  samplingFor(round) {
    let sampling = this.contract.sampling;
    for (const policy of this.policies) if (policy.from_round <= round) sampling = policy.sampling;
    return sampling; // P1-POL-1: the latest applicable policy wins
  }

  // -------------------------------------------------------------------------------------- proposals

  /** §6.3 steps 1–4 and the limits, in the draft's order: a stored verdict, a wait, or a ticket. */
  admit(proposal, peer, identity) {
    if (this.drafter === null || peer !== this.drafter || proposal.drafter !== this.drafter) {
      throw new P.ProtocolError('notAssigned', `${peer} is not the drafter assigned to the session`);
    }
    this.requireServing();
    this.requireEpoch(proposal.epoch);
    const stored = this.verdicts.get(proposal.round);
    if (stored) return { stored };
    if (this.inFlight && this.inFlight.proposal.round === proposal.round) {
      if (this.inFlight.identity === identity) return { wait: proposal.round };
      throw this.staleBase(`round ${proposal.round} is being verified for another proposal`); // P1-IDEM-1
    }
    this.requireOpen();
    if (proposal.base !== this.output.length || !proposal.base_digest.equals(this.digest)) {
      throw this.staleBase(`base ${proposal.base} does not match the committed ${this.output.length} tokens`);
    }
    if (proposal.round !== this.round + 1) throw this.staleBase(`round ${proposal.round} is not ${this.round + 1}`);
    const m = proposal.tokens.length;
    const limit = Math.min(this.contract.m_max, this.control.limit());
    if (m > limit) throw new P.ProtocolError('limit', `M = ${m} exceeds the limit ${limit}`);
    if (proposal.tokens.some((token) => token >= this.vocab)) {
      throw new P.ProtocolError('badProposal', 'a proposed token is outside the vocabulary');
    }
    const needsQ = this.contract.rule === 2;
    if (needsQ && proposal.q_rows === undefined) {
      throw new P.ProtocolError('qUnavailable', 'rule 2 needs q_rows and the proposal has none'); // P1-Q-1
    }
    this.inFlight = { proposal, identity, sampling: this.samplingFor(proposal.round), needsQ };
    return { ticket: this.inFlight };
  }

  abandon(ticket) {
    if (this.inFlight === ticket) this.inFlight = null;
  }

  /** §6.3 Acceptance, truncation and Control on the target rows p[1..M+1]: the commit record and the verdict,
   *  not yet visible. */
  decide(ticket, pRows, uniform, load, qRows) {
    const tokens = ticket.proposal.tokens;
    const outcome = ticket.needsQ ? P.rule2(pRows, qRows, tokens, uniform) : P.rule1(pRows, tokens);
    const { kept, finished } = P.truncate(outcome.emitted, this.contract.stop, this.contract.max_new, this.output.length);
    const control = this.control.onRound(outcome.accepted, tokens.length, finished, load);
    const record = this.record(ticket.proposal.round, kept);
    const verdict = { session: this.session, epoch: this.epoch, round: ticket.proposal.round,
      accepted: outcome.accepted, emitted: kept, committed: record.committed, digest: record.digest,
      action: control.action, m_cap: control.mCap, low: control.low, load };
    return { record, verdict, action: control.action };
  }

  record(round, emitted) {
    return { epoch: this.epoch, round, emitted, committed: this.output.length + emitted.length,
      digest: P.extendDigest(this.digest, emitted) };
  }

  // -------------------------------------------------------------------------------------- self-decoding

  selfDecodingShouldStop(load) {
    const budget = this.contract.self_max === undefined || this.selfDecodedInPeriod < this.contract.self_max;
    return !(budget && this.control.selfDecodePermitted(load));
  }

  /** §6.5.2 self_decode: one token drawn from p, a round of its own (P1-SAMP-3: i = 1, purpose 1). */
  selfDecode(p, uniform) {
    const round = this.round + 1;
    const token = this.contract.rule === 2 ? P.draw(p, uniform(1, P.PURPOSE_DRAW)) : P.greedy(p);
    const { kept, finished } = P.truncate([token], this.contract.stop, this.contract.max_new, this.output.length);
    return { record: this.record(round, kept), verdict: null, action: finished ? P.ACTION.finish : P.ACTION.selfDecode };
  }

  endSelfDecoding() {
    this.phase = PHASE.active;
    this.drafter = null;
    return this.event(P.ACTION.continue); // P1-EVT-1: kind 0, a drafter is needed again
  }

  // -------------------------------------------------------------------------------------- commit

  /** Applies a round whose record was appended; returns the events to post (P1-EVT-1). */
  commit(pending) {
    const { record } = pending;
    this.output.push(...record.emitted);
    this.digest = record.digest;
    this.round = record.round;
    if (pending.verdict) {
      this.verdicts.set(record.round, pending.verdict);
      this.inFlight = null;
    } else {
      this.selfDecodedInPeriod += 1;
    }
    switch (pending.action) {
      case P.ACTION.finish: this.phase = PHASE.finished; return [this.event(P.ACTION.finish)];
      case P.ACTION.fail: this.phase = PHASE.failed; return [this.event(P.ACTION.fail)];
      case P.ACTION.switch: this.drafter = null; return [this.event(P.ACTION.switch)];
      case P.ACTION.selfDecode:
        // A self-decoded token continues its period, or lands after an assignment ended it: never a new period.
        if (this.phase === PHASE.selfDecoding || !pending.verdict) return [];
        this.drafter = null;
        this.phase = PHASE.selfDecoding;
        this.selfDecodedInPeriod = 0;
        return [this.event(P.ACTION.selfDecode)];
      default: return [];
    }
  }

  fence() {
    this.fenced = true;
    this.inFlight = null;
  }

  event(kind) {
    return { session: this.session, epoch: this.epoch, kind, committed: this.output.length, digest: this.digest };
  }

  // -------------------------------------------------------------------------------------- output

  /** §6.7; null means "nothing yet: wait" (P1-OUT-1). */
  outputFrom(start) {
    this.requireServing();
    const tokens = this.output.slice(start);
    if (!tokens.length && !this.closed) return null;
    const out = { session: this.session, epoch: this.epoch, from: start, tokens, final: this.closed };
    if (this.closed) out.finish = this.phase === PHASE.finished ? P.ACTION.finish : P.ACTION.fail;
    return out;
  }
}

export { PHASE, Session };
