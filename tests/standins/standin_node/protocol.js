// SDCP's pure parts for the stand-in verifier: the checks of the messages it receives (§5.2), the HMAC uniforms
// (§6.4), p under a sampling profile (§4.1, P1-SAMP-1), the draws of P1-SAMP-2, rules 1 and 2 (§6.4), truncation
// (§6.3) and the speculation control of §6.5. No I/O. CBOR, problem types, the member checks and the digests are
// the stand-ins' shared ones (node_common/protocol.js).
//
// Written from the draft and the profile, not translated from the Python reference line by line: the harness
// judges this code as it judges any verifier.

import crypto from 'node:crypto';
import os from 'node:os';
import {
  ProtocolError, STATUS, argmax as greedy, bstr, checked, checkedContract, nucleus, parseChecked, sampling, tokensOrRef,
  tstr, u32, uint, uints,
} from './node_common/protocol.js';

// ----------------------------------------------------------------------------------------------- messages

const MESSAGES = {
  sessionOpen: {
    session: [(v, p) => bstr(v, p, 16), true], epoch: [(v, p) => uint(v, p), true],
    prompt: [tokensOrRef, true], commit_log: [tstr, true], prompt_kv: [tstr, false],
    resume: [(v, p) => checked(v, {
      round: [(w, q) => uint(w, q), true], committed: [(w, q) => uint(w, q), true],
      digest: [(w, q) => bstr(w, q, 32), true], committed_tokens: [tstr, true], target_kv: [tstr, false],
    }, p), false],
    contract: [(v) => v, true], // checked last (the envelope's 400 comes before the contract's 422)
  },
  assignment: {
    session: [(v, p) => bstr(v, p, 16), true], epoch: [(v, p) => uint(v, p), true],
    verifier: [tstr, true], drafter: [tstr, true], prompt: [tokensOrRef, true], round: [(v, p) => uint(v, p), true],
    sampling: [(v, p) => sampling(v, p), false], committed: [(v, p) => uint(v, p), true],
    digest: [(v, p) => bstr(v, p, 32), true], committed_tokens: [tstr, false], m_init: [(v, p) => uint(v, p), true],
    contract: [(v) => v, true],
  },
  proposal: {
    session: [(v, p) => bstr(v, p, 16), true], epoch: [(v, p) => uint(v, p), true],
    round: [(v, p) => uint(v, p), true], drafter: [tstr, true], base: [(v, p) => uint(v, p), true],
    base_digest: [(v, p) => bstr(v, p, 32), true], tokens: [(v, p) => uints(v, p, 1), true],
    q_rows: [tstr, false], draft_kv: [tstr, false],
    status: [(v, p) => checked(v, STATUS, p), true],
  },
  policy: {
    session: [(v, p) => bstr(v, p, 16), true], from_round: [(v, p) => uint(v, p), true],
    sampling: [(v, p) => sampling(v, p), true],
  },
};

/** Decodes and checks one message (P1-MSG-2: 400 sdcp-bad-message; a bad contract inside: 422). */
function parseMessage(kind, bytes) {
  const message = parseChecked(bytes, MESSAGES[kind], kind);
  if ('contract' in message) message.contract = checkedContract(message.contract, `${kind}.contract`);
  return message;
}

// ----------------------------------------------------------------------------------------------- uniforms

const PURPOSE_ACCEPT = 0;
const PURPOSE_DRAW = 1;
const TWO_53 = 2 ** 53;

/** §6.4's HMAC derivation for one round of one session (seed as eight octets, network order). */
function seededUniforms(seed, session, round) {
  const key = Buffer.alloc(8);
  key.writeBigUInt64BE(BigInt(seed));
  return (i, purpose) => {
    const mac = crypto.createHmac('sha256', key)
      .update(Buffer.concat([Buffer.from('SDCP-VERIFY-1\0'), session, u32(round), u32(i), Buffer.from([purpose])]))
      .digest();
    return Number(mac.readBigUInt64BE(0) >> 11n) / TWO_53;
  };
}

const pool = Buffer.alloc(8 * 512);
let pooled = pool.length;

/** §6.4: "Without a seed, the verifier uses a cryptographically secure random number generator" (read from the
 *  CSPRNG 4 KiB at a time). */
function systemUniforms() {
  return () => {
    if (pooled >= pool.length) {
      crypto.randomFillSync(pool);
      pooled = 0;
    }
    const value = pool.readBigUInt64BE(pooled) >> 11n;
    pooled += 8;
    return Number(value) / TWO_53;
  };
}

// ----------------------------------------------------------------------------------------------- p and draws

/** P1-SAMP-2: the smallest k with u < (d[0]+...+d[k]) / sum(d), sums taken in ascending id, binary64. */
function draw(weights, u) {
  const cumulative = new Float64Array(weights.length);
  let running = 0;
  for (let k = 0; k < weights.length; k += 1) {
    running += weights[k];
    cumulative[k] = running;
  }
  for (let k = 0; k < weights.length; k += 1) if (u < cumulative[k] / running) return k;
  return weights.length - 1;
}

/** §4.1 p for one position: temperature, then top-k, then top-p (P1-SAMP-1; P1-NUM-1: no temperature under
 *  rule 2 is 1.0, under rule 1 one-hot). */
function targetDistribution(logits, profile, rule) {
  const milli = profile && profile.temperature_milli !== undefined ? profile.temperature_milli : (rule === 1 ? 0 : 1000);
  const v = logits.length;
  if (milli === 0) {
    const row = new Float64Array(v);
    row[greedy(logits)] = 1;
    return row;
  }
  const t = milli / 1000;
  const scores = Float64Array.from(logits, (x) => x / t);
  const k = (profile && profile.top_k) || 0;
  if (k > 0 && k < v) {
    // Keep every score above the k-th largest, then as many ties at it as fit, smallest ids first.
    const kth = Float64Array.from(scores).sort()[v - k];
    let room = k - scores.filter((x) => x > kth).length;
    for (let id = 0; id < v; id += 1) {
      if (scores[id] > kth) continue;
      if (scores[id] === kth && room > 0) { room -= 1; continue; }
      scores[id] = -Infinity;
    }
  }
  let max = -Infinity;
  for (const x of scores) if (x > max) max = x;
  const probs = Float64Array.from(scores, (x) => Math.exp(x - max));
  let total = 0;
  for (const x of probs) total += x;
  for (let id = 0; id < v; id += 1) probs[id] /= total;
  return nucleus(probs, profile && profile.top_p_milli !== undefined ? profile.top_p_milli : 1000);
}

// ----------------------------------------------------------------------------------------------- rules

/** Rule 1, greedy (§6.4). */
function rule1(pRows, tokens) {
  let accepted = 0;
  while (accepted < tokens.length && tokens[accepted] === greedy(pRows[accepted])) accepted += 1;
  return { accepted, emitted: [...tokens.slice(0, accepted), greedy(pRows[accepted])] };
}

/** The q_rows object as M rows of V binary32 values, checked before any random value (§6.3, §6.4, P1-Q-1). */
function checkQRows(blob, tokens, v) {
  if (os.endianness() !== 'LE') throw new Error('the stand-in reads q_rows as little-endian floats');
  const m = tokens.length;
  if (blob.length !== m * v * 4) {
    throw new ProtocolError('badProposal', `q_rows holds ${blob.length} octets, expected M*V*4 = ${m * v * 4}`);
  }
  // binary32, little-endian (§5.2): copied into an aligned buffer, read as this (little-endian) machine's floats
  const values = new Float32Array(new Uint8Array(blob).buffer);
  const rows = [];
  for (let i = 0; i < m; i += 1) {
    const row = Float64Array.from(values.subarray(i * v, (i + 1) * v));
    for (const value of row) {
      if (!Number.isFinite(value) || value < 0) throw new ProtocolError('badProposal', 'q_rows holds a negative, NaN or infinite value');
    }
    if (!(tokens[i] < v) || row[tokens[i]] <= 0) throw new ProtocolError('badProposal', `q[${i + 1}](x[${i + 1}]) is zero`);
    rows.push(row);
  }
  return rows;
}

/** Rule 2, speculative sampling (§6.4; P1-SAMP-3: the draw at a rejection uses i = a + 1, purpose 1). */
function rule2(pRows, qRows, tokens, uniform) {
  for (let i = 0; i < tokens.length; i += 1) {
    const x = tokens[i];
    const r = uniform(i + 1, PURPOSE_ACCEPT);
    if (!(r < Math.min(1, pRows[i][x] / qRows[i][x]))) {
      const rest = pRows[i].map((p, k) => Math.max(0, p - qRows[i][k]));
      const mass = rest.reduce((a, b) => a + b, 0);
      // No residual mass (a q that sums above one): draw from p[i], the law the output follows.
      const extra = draw(mass > 0 ? rest : pRows[i], uniform(i + 1, PURPOSE_DRAW));
      return { accepted: i, emitted: [...tokens.slice(0, i), extra] };
    }
  }
  const m = tokens.length;
  return { accepted: m, emitted: [...tokens, draw(pRows[m], uniform(m + 1, PURPOSE_DRAW))] };
}

/** §6.3: "It truncates the emitted tokens after the first stop token and at max_new". */
function truncate(emitted, stop, maxNew, committed) {
  let kept = emitted;
  const first = kept.findIndex((token) => stop.includes(token));
  if (first >= 0) kept = kept.slice(0, first + 1);
  kept = kept.slice(0, Math.max(0, maxNew - committed));
  const finished = kept.some((token) => stop.includes(token)) || committed + kept.length === maxNew;
  return { kept, finished };
}

// ----------------------------------------------------------------------------------------------- control

const ACTION = { continue: 0, reduce: 1, switch: 2, selfDecode: 3, finish: 4, fail: 5 };

/** c, g, j and m_cap of one session (§6.5, P1-CTL-1..5). */
class SpeculationControl {
  constructor(contract) {
    this.contract = contract;
    this.c = 0;
    this.g = 0;
    this.j = 0;
    this.mCap = null;
    this.ceiling = null;
  }

  onAssignment(mInit) {
    this.mCap = this.ceiling = Math.min(this.contract.m_max, mInit);
  }

  limit() {
    return this.mCap;
  }

  selfDecodePermitted(load) {
    return this.contract.self_load !== undefined && load <= this.contract.self_load;
  }

  onRound(accepted, proposed, finished, load) {
    const ratio = this.contract.low_ratio || 0;
    const low = ratio ? 100 * accepted < ratio * proposed : accepted === 0;
    if (low) {
      this.c += 1;
      this.g = 0;
    } else {
      this.c = 0;
      this.g += 1;
      if (this.g >= this.contract.low_rounds) this.j = 0;
    }
    let action = ACTION.continue;
    if (this.c >= this.contract.low_rounds) {
      this.c = 0;
      action = ACTION.fail;
      const fallback = this.contract.fallback;
      while (this.j < fallback.length) {
        const entry = fallback[this.j];
        this.j += 1;
        if (entry !== ACTION.selfDecode || this.selfDecodePermitted(load)) { action = entry; break; }
      }
    }
    if (action === ACTION.reduce) this.mCap = Math.max(1, Math.floor(this.mCap / 2));
    else if (!low) this.mCap = Math.min(this.ceiling, this.mCap + 1);
    if (finished) action = ACTION.finish; // P1-CTL-5
    return { action, mCap: this.mCap, low: this.c };
  }
}

export {
  ACTION, SpeculationControl, checkQRows, draw, greedy, parseMessage, rule1, rule2, seededUniforms, systemUniforms,
  targetDistribution, truncate, PURPOSE_DRAW,
};
export {
  HttpError, PROBLEM_PREFIX, ProtocolError, b64url, contractDigest, decode, decodeSequence, encode, extendDigest,
  prefixDigest, problemBody,
} from './node_common/protocol.js';
