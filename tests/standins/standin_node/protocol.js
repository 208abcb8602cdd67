// SDCP's pure parts for the stand-in verifier: CBOR on the wire, message checks, problem types, the digest
// chain (§4.1, §4.2), the HMAC uniforms (§6.4), p under a sampling profile (§4.1, P1-SAMP-1), the draws of
// P1-SAMP-2, rules 1 and 2 (§6.4), truncation (§6.3) and the speculation control of §6.5. No I/O.
//
// Written from the draft and the profile, not translated from the Python reference line by line: the harness
// judges this code as it judges any verifier.

import crypto from 'node:crypto';
import os from 'node:os';
import { decode as decodeItem } from 'cbor2';
import { Encoder } from 'cbor-x';

const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, variableMapSize: true, tagUint8Array: false });

// ----------------------------------------------------------------------------------------------- problems

const PROBLEM_PREFIX = 'urn:ietf:params:sdcp:problem:';
const PROBLEMS = {
  staleEpoch: ['sdcp-stale-epoch', 409],
  staleBase: ['sdcp-stale-base', 409],
  qUnavailable: ['sdcp-q-unavailable', 409],
  badContract: ['sdcp-bad-contract', 422],
  limit: ['sdcp-limit', 422],
  sessionClosed: ['sdcp-session-closed', 410],
  badProposal: ['sdcp-bad-proposal', 422],
  notAssigned: ['sdcp-not-assigned', 403],
  badMessage: ['sdcp-bad-message', 400], // profile-only (P1-MSG-2)
};

class ProtocolError extends Error {
  /** A refusal with a problem type of Table 2 (or the profile's sdcp-bad-message). */
  constructor(kind, detail, state = null) {
    super(detail);
    const [suffix, status] = PROBLEMS[kind];
    this.suffix = suffix;
    this.status = status;
    this.detail = detail;
    this.state = state;
  }
}

class HttpError extends Error {
  /** An answer with a plain HTTP status and no SDCP problem type (404, 405, 503). */
  constructor(status, detail) {
    super(detail);
    this.status = status;
    this.detail = detail;
  }
}

function b64url(bytes) {
  return Buffer.from(bytes).toString('base64url');
}

// ----------------------------------------------------------------------------------------------- CBOR

const UINT32_LIMIT = 2 ** 32;
const UINT64_LIMIT = 2n ** 64n;

/** A value ready for cbor-x with RFC 8949 §4.2.1 core deterministic encoding (P1-MSG-1): map keys sorted by
 *  their encoded bytes, integers in their shortest form (cbor-x writes a BigInt as a uint64 and a Number at or
 *  above 2^32 as a float, so integers are handed to it as a Number below 2^32 and a BigInt from there). */
function wire(value) {
  if (typeof value === 'bigint') return value < BigInt(UINT32_LIMIT) ? Number(value) : value;
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= UINT32_LIMIT) return BigInt(value);
    return value;
  }
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return Buffer.from(value);
  if (Array.isArray(value)) return value.map(wire);
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).filter((key) => value[key] !== undefined && value[key] !== null);
    keys.sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const out = {};
    for (const key of keys) out[key] = wire(value[key]);
    return out;
  }
  return value;
}

function encode(value) {
  return cbor.encode(wire(value));
}

/** One request body: any well-formed encoding (P1-MSG-1), duplicate map keys refused (P1-MSG-2). cbor2 reads
 *  all of RFC 8949 (indefinite-length strings too); cbor-x, which writes faster, does not. */
function decode(bytes) {
  try {
    return decodeItem(bytes, { rejectDuplicateKeys: true });
  } catch (error) {
    throw new ProtocolError('badMessage', `malformed CBOR: ${error.message}`);
  }
}

/** The items of a CBOR sequence (a commit log, RFC 8742), as the harness's MLC serves them. */
function decodeSequence(bytes) {
  return cbor.decodeMultiple(bytes) || [];
}

// ----------------------------------------------------------------------------------------------- message checks

class FieldError extends Error {}

const isMap = (value) => value !== null && typeof value === 'object' && !Array.isArray(value) && !Buffer.isBuffer(value) && !(value instanceof Uint8Array);

function uint(value, path, { le, ge } = {}) {
  let number;
  if (typeof value === 'bigint') {
    if (value < 0n || value >= UINT64_LIMIT) throw new FieldError(`${path}: expected uint`);
    number = value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  } else if (typeof value === 'number' && Number.isInteger(value) && value >= 0) {
    number = value;
  } else {
    throw new FieldError(`${path}: expected uint, got ${typeof value}`);
  }
  if (le !== undefined && number > le) throw new FieldError(`${path}: ${number} is above .le ${le}`);
  if (ge !== undefined && number < ge) throw new FieldError(`${path}: ${number} is below .ge ${ge}`);
  return number;
}

function bstr(value, path, size) {
  if (!(Buffer.isBuffer(value) || value instanceof Uint8Array)) throw new FieldError(`${path}: expected bstr`);
  if (size !== undefined && value.length !== size) throw new FieldError(`${path}: expected bstr .size ${size}`);
  return Buffer.from(value);
}

function tstr(value, path) {
  if (typeof value !== 'string') throw new FieldError(`${path}: expected tstr`);
  return value;
}

function uints(value, path, minItems = 0) {
  if (!Array.isArray(value)) throw new FieldError(`${path}: expected array`);
  if (value.length < minItems) throw new FieldError(`${path}: expected at least ${minItems} items`);
  return value.map((item, index) => uint(item, `${path}[${index}]`));
}

function tokensOrRef(value, path) {
  return typeof value === 'string' ? value : uints(value, path);
}

/** Checks ``obj`` against ``members`` ({name: [checker, required]}); unknown keys are ignored (§5.2) unless
 *  ``closed``. Returns the checked values. */
function checked(obj, members, path, closed = false) {
  if (!isMap(obj)) throw new FieldError(`${path}: expected a map`);
  if (closed) {
    const unknown = Object.keys(obj).filter((key) => !(key in members));
    if (unknown.length) throw new FieldError(`${path}: unknown keys ${JSON.stringify(unknown)}`);
  }
  const out = {};
  for (const [name, [check, required]] of Object.entries(members)) {
    if (!(name in obj) || obj[name] === undefined) {
      if (required) throw new FieldError(`${path}.${name}: required member missing`);
      continue;
    }
    out[name] = check(obj[name], `${path}.${name}`);
  }
  return out;
}

const LADDER = new Set([1, 2, 3, 5]);

function sampling(value, path, closed = false) {
  return checked(value, {
    temperature_milli: [(v, p) => uint(v, p), false], top_k: [(v, p) => uint(v, p), false],
    top_p_milli: [(v, p) => uint(v, p, { le: 1000 }), false], seed: [(v, p) => uint(v, p), false],
  }, path, closed);
}

function contractOf(value, path) {
  // §4.1: "A contract that contains a key not defined by this document MUST be rejected"; the sampling map
  // inside it is closed too (its digest covers it).
  try {
    return checked(value, {
      target: [(v, p) => bstr(v, p, 32), true], tokenizer: [(v, p) => bstr(v, p, 32), true],
      drafters: [(v, p) => { if (!Array.isArray(v) || !v.length) throw new FieldError(`${p}: expected [+ hash32]`); return v.map((d, i) => bstr(d, `${p}[${i}]`, 32)); }, false],
      rule: [(v, p) => uint(v, p), true], sampling: [(v, p) => sampling(v, p, true), false],
      m_max: [(v, p) => uint(v, p, { le: 64 }), true], max_new: [(v, p) => uint(v, p), true],
      stop: [(v, p) => uints(v, p), true], low_rounds: [(v, p) => uint(v, p, { ge: 1 }), true],
      low_ratio: [(v, p) => uint(v, p, { le: 100 }), false],
      fallback: [(v, p) => uints(v, p, 1).map((a, i) => { if (!LADDER.has(a)) throw new FieldError(`${p}[${i}]: not a ladder action`); return a; }), true],
      self_load: [(v, p) => uint(v, p, { le: 100 }), false], self_max: [(v, p) => uint(v, p), false],
      scope: [(v, p) => bstr(v, p, 16), false],
    }, path, true);
  } catch (error) {
    if (error instanceof FieldError) throw new ProtocolError('badContract', error.message);
    throw error;
  }
}

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
    status: [(v, p) => checked(v, {
      instance: [tstr, true], role: [(w, q) => { const r = uint(w, q); if (r !== 1 && r !== 2) throw new FieldError(`${q}: not 1 or 2`); return r; }, true],
      load: [(w, q) => uint(w, q, { le: 100 }), true], queue: [(w, q) => uint(w, q), true],
      accept_milli: [(w, q) => uint(w, q, { le: 1000 }), false], cache_mbps: [(w, q) => uint(w, q), false],
      ttl_ms: [(w, q) => uint(w, q), true],
    }, p), true],
  },
  policy: {
    session: [(v, p) => bstr(v, p, 16), true], from_round: [(v, p) => uint(v, p), true],
    sampling: [(v, p) => sampling(v, p), true],
  },
};

/** Decodes and checks one message (P1-MSG-2: 400 sdcp-bad-message; a bad contract inside: 422). */
function parseMessage(kind, bytes) {
  const obj = decode(bytes);
  let message;
  try {
    message = checked(obj, MESSAGES[kind], kind);
  } catch (error) {
    if (error instanceof FieldError) throw new ProtocolError('badMessage', error.message);
    throw error;
  }
  if ('contract' in message) message.contract = contractOf(message.contract, `${kind}.contract`);
  return message;
}

// ----------------------------------------------------------------------------------------------- digests

const sha256 = (...parts) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();

function u32(value) {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/** §4.1: SHA-256("SDCP-CONTRACT-1" || 0x00 || deterministic_cbor(contract)), over our own re-encoding. */
function contractDigest(contract) {
  return sha256(Buffer.from('SDCP-CONTRACT-1\0'), encode(contract));
}

/** §4.2 d[0]. */
function prefixDigest(contractDigestValue, prompt) {
  return sha256(Buffer.from('SDCP-PREFIX-1\0'), contractDigestValue, u32(prompt.length), ...prompt.map(u32));
}

/** §4.2: d[k] = SHA-256(d[k-1] || uint32(o[k])), once per token. */
function extendDigest(digest, tokens) {
  let current = digest;
  for (const token of tokens) current = sha256(current, u32(token));
  return current;
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

/** Argmax, ties to the smallest id (§6.4 rule 1, §4.1 temperature zero). */
function greedy(row) {
  let best = 0;
  for (let k = 1; k < row.length; k += 1) if (row[k] > row[best]) best = k;
  return best;
}

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
  const topP = profile && profile.top_p_milli !== undefined ? profile.top_p_milli : 1000;
  if (topP >= 1000) return probs;
  // Shortest prefix by probability descending (ties by id ascending) whose sequential sum reaches top_p;
  // top_p 0 keeps the most probable token; renormalised by that sum.
  const order = [...probs.keys()].filter((id) => probs[id] > 0).sort((a, b) => probs[b] - probs[a] || a - b);
  let mass = 0;
  let length = order.length;
  for (let n = 0; n < order.length; n += 1) {
    mass += probs[order[n]];
    if (mass >= topP / 1000) { length = n + 1; break; }
  }
  const kept = new Float64Array(v);
  for (const id of order.slice(0, length)) kept[id] = probs[id] / mass;
  return kept;
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
  ACTION, HttpError, PROBLEM_PREFIX, ProtocolError, SpeculationControl, b64url, checkQRows, contractDigest,
  decode, draw, encode, extendDigest, greedy, parseMessage, prefixDigest, rule1, rule2, seededUniforms,
  systemUniforms, targetDistribution, truncate, PURPOSE_DRAW, decodeSequence,
};
