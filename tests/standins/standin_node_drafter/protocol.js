// The stand-in drafter's pure parts: CBOR (P1-MSG-1/2), problem types (Table 2, P1-ERR-1), the assignment and
// verdict checks (§5.2), the digest chain (§4.1, §4.2), the draft distribution under a sampling profile
// (§4.1, P1-SAMP-1) and the inverse-CDF draw (P1-SAMP-2). No I/O.
//
// Written from draft-sdcp.txt and PROFILE.md only.

import crypto from 'node:crypto';
import { decode as decodeItem } from 'cbor2';
import { Encoder } from 'cbor-x';

const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, variableMapSize: true, tagUint8Array: false });

// ------------------------------------------------------------------------------------------------ problems

const PROBLEM_PREFIX = 'urn:ietf:params:sdcp:problem:'; // P1-ERR-1
const PROBLEMS = {
  staleEpoch: ['sdcp-stale-epoch', 409],
  badContract: ['sdcp-bad-contract', 422],
  notAssigned: ['sdcp-not-assigned', 403],
  badMessage: ['sdcp-bad-message', 400], // profile-only (P1-MSG-2)
};

class ProtocolError extends Error {
  constructor(kind, detail) {
    super(detail);
    [this.suffix, this.status] = PROBLEMS[kind];
  }
}

class FieldError extends Error {}

const b64url = (bytes) => Buffer.from(bytes).toString('base64url');

// ------------------------------------------------------------------------------------------------ CBOR

const UINT32_LIMIT = 2 ** 32;

/** Prepares a value for RFC 8949 §4.2.1 core deterministic encoding (P1-MSG-1): map keys in bytewise order of
 *  their encodings (for text keys: shorter first, then bytewise), integers in shortest form (cbor-x writes a
 *  Number >= 2^32 as a float, so those go as BigInt). */
function wire(value) {
  if (typeof value === 'bigint') return value < BigInt(UINT32_LIMIT) ? Number(value) : value;
  if (typeof value === 'number' && Number.isInteger(value) && value >= UINT32_LIMIT) return BigInt(value);
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

const encode = (value) => cbor.encode(wire(value));

/** Any well-formed encoding is accepted (P1-MSG-1); duplicate map keys are malformed (P1-MSG-2). */
function decode(bytes) {
  try {
    return decodeItem(bytes, { rejectDuplicateKeys: true });
  } catch (error) {
    throw new ProtocolError('badMessage', `malformed CBOR: ${error.message}`);
  }
}

// ------------------------------------------------------------------------------------------------ checks

const isMap = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);

function uint(value, path, { le, ge } = {}) {
  let n = value;
  if (typeof n === 'bigint') {
    if (n < 0n || n >= 2n ** 64n) throw new FieldError(`${path}: expected uint`);
    n = n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  } else if (!(typeof n === 'number' && Number.isInteger(n) && n >= 0)) {
    throw new FieldError(`${path}: expected uint`);
  }
  if (le !== undefined && n > le) throw new FieldError(`${path}: ${n} is above ${le}`);
  if (ge !== undefined && n < ge) throw new FieldError(`${path}: ${n} is below ${ge}`);
  return n;
}

function bstr(value, path, size) {
  if (!(value instanceof Uint8Array)) throw new FieldError(`${path}: expected bstr`);
  if (size !== undefined && value.length !== size) throw new FieldError(`${path}: expected bstr .size ${size}`);
  return Buffer.from(value);
}

function tstr(value, path) {
  if (typeof value !== 'string') throw new FieldError(`${path}: expected tstr`);
  return value;
}

function uints(value, path, minItems = 0) {
  if (!Array.isArray(value) || value.length < minItems) throw new FieldError(`${path}: expected an array of uint`);
  return value.map((item, i) => uint(item, `${path}[${i}]`));
}

const tokensOrRef = (v, p) => (typeof v === 'string' ? v : uints(v, p));

/** ``members``: {name: [check, required]}. Unknown keys are ignored (§5.2) unless ``closed`` (the contract). */
function checked(obj, members, path, closed = false) {
  if (!isMap(obj)) throw new FieldError(`${path}: expected a map`);
  if (closed) {
    const unknown = Object.keys(obj).filter((key) => !(key in members));
    if (unknown.length) throw new FieldError(`${path}: keys not defined by §4.1: ${unknown.join(', ')}`);
  }
  const out = {};
  for (const [name, [check, required]] of Object.entries(members)) {
    if (obj[name] === undefined) {
      if (required) throw new FieldError(`${path}.${name}: required member missing`);
      continue;
    }
    out[name] = check(obj[name], `${path}.${name}`);
  }
  return out;
}

const samplingOf = (v, p, closed = false) => checked(v, {
  temperature_milli: [uint, false], top_k: [uint, false],
  top_p_milli: [(w, q) => uint(w, q, { le: 1000 }), false], seed: [uint, false],
}, p, closed);

const LADDER = new Set([1, 2, 3, 5]); // §4.1 ladder = reduce / switch / self_decode / fail

/** §4.1: the contract is closed ("a key not defined by this document MUST be rejected", sdcp-bad-contract). */
function contractOf(value) {
  try {
    return checked(value, {
      target: [(v, p) => bstr(v, p, 32), true], tokenizer: [(v, p) => bstr(v, p, 32), true],
      drafters: [(v, p) => { if (!Array.isArray(v) || !v.length) throw new FieldError(`${p}: expected [+ hash32]`); return v.map((d, i) => bstr(d, `${p}[${i}]`, 32)); }, false],
      rule: [uint, true], sampling: [(v, p) => samplingOf(v, p, true), false],
      m_max: [(v, p) => uint(v, p, { le: 64 }), true], max_new: [uint, true], stop: [uints, true],
      low_rounds: [(v, p) => uint(v, p, { ge: 1 }), true], low_ratio: [(v, p) => uint(v, p, { le: 100 }), false],
      fallback: [(v, p) => uints(v, p, 1).map((a) => { if (!LADDER.has(a)) throw new FieldError(`${p}: ${a} is not a ladder action`); return a; }), true],
      self_load: [(v, p) => uint(v, p, { le: 100 }), false], self_max: [uint, false],
      scope: [(v, p) => bstr(v, p, 16), false],
    }, 'contract', true);
  } catch (error) {
    if (error instanceof FieldError) throw new ProtocolError('badContract', error.message);
    throw error;
  }
}

/** §5.2 assignment: the envelope first (400 sdcp-bad-message, P1-MSG-2), then the contract (422). */
function parseAssignment(bytes) {
  const obj = decode(bytes);
  let a;
  try {
    a = checked(obj, {
      session: [(v, p) => bstr(v, p, 16), true], epoch: [uint, true], contract: [(v) => v, true],
      verifier: [tstr, true], drafter: [tstr, true], prompt: [tokensOrRef, true], round: [uint, true],
      sampling: [samplingOf, false], committed: [uint, true], digest: [(v, p) => bstr(v, p, 32), true],
      committed_tokens: [tstr, false], m_init: [uint, true],
    }, 'assignment');
  } catch (error) {
    if (error instanceof FieldError) throw new ProtocolError('badMessage', error.message);
    throw error;
  }
  a.contract = contractOf(a.contract);
  return a;
}

/** §5.2 verdict; returns null if it is not one (the caller treats that as a lost answer). */
function parseVerdict(bytes) {
  try {
    return checked(decodeItem(bytes), {
      session: [(v, p) => bstr(v, p, 16), true], epoch: [uint, true], round: [uint, true],
      accepted: [uint, true], emitted: [uints, true], committed: [uint, true],
      digest: [(v, p) => bstr(v, p, 32), true], action: [uint, true], m_cap: [uint, true],
      low: [uint, false], load: [uint, false],
    }, 'verdict');
  } catch {
    return null;
  }
}

/** §5.2 output (GET sessions/{id}/output). */
function parseOutput(bytes) {
  return checked(decodeItem(bytes), {
    epoch: [uint, true], from: [uint, true], tokens: [uints, true], final: [(v) => v === true, false],
  }, 'output');
}

/** A token list object in the MLC (P1-MLC-2: a CBOR array of uint). */
function parseTokenList(bytes, what) {
  try {
    return uints(decodeItem(bytes), what);
  } catch (error) {
    throw new ProtocolError('badMessage', `${what} is not a CBOR array of uint: ${error.message}`);
  }
}

/** A refusal's problem document (P1-ERR-1: JSON or CBOR); {type suffix, state} or null members. */
function parseProblem(headers, body) {
  const media = String(headers['content-type'] || '').split(';')[0].trim().toLowerCase();
  let doc = null;
  try {
    doc = media.endsWith('json') ? JSON.parse(body.toString('utf8')) : decodeItem(body);
  } catch {
    doc = null;
  }
  if (!isMap(doc)) return { suffix: null, state: null };
  const type = typeof doc.type === 'string' ? doc.type : '';
  return { suffix: type.split(/[:/]/).pop() || null, state: isMap(doc.state) ? doc.state : null };
}

/** P1-ERR-2: a stale-base state, byte members as unpadded base64url (bytes accepted too). */
function parseState(state) {
  const bytes = (v) => (typeof v === 'string' ? Buffer.from(v, 'base64url') : Buffer.from(v));
  try {
    const s = checked(state, {
      epoch: [uint, false], round: [uint, true], committed: [uint, true],
      digest: [(v, p) => { const b = bytes(v); if (b.length !== 32) throw new FieldError(`${p}: not 32 octets`); return b; }, true],
      state: [uint, false],
    }, 'state');
    return s;
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------------------------------------ digests

const sha256 = (...parts) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();

function u32(value) {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/** §4.1 contract_digest, over our own deterministic re-encoding of the decoded contract (P1-MSG-1). */
const contractDigest = (contract) => sha256(Buffer.from('SDCP-CONTRACT-1\0'), encode(contract));

/** §4.2 d[0]. */
const prefixDigest = (cd, prompt) => sha256(Buffer.from('SDCP-PREFIX-1\0'), cd, u32(prompt.length), ...prompt.map(u32));

/** §4.2 d[k] = SHA-256(d[k-1] || uint32(o[k])): the digests after each token, in order. */
function chain(digest, tokens) {
  const out = [];
  let d = digest;
  for (const t of tokens) out.push(d = sha256(d, u32(t)));
  return out;
}

// ------------------------------------------------------------------------------------------------ sampling

/** Argmax, ties to the smallest token id (§6.4 rule 1; P1-DRF-4 greedy draft tokens). */
function argmax(row) {
  let best = 0;
  for (let k = 1; k < row.length; k += 1) if (row[k] > row[best]) best = k;
  return best;
}

/** The distribution after ``logits`` under a sampling profile, as §4.1 / P1-SAMP-1 define p: logits divided by
 *  the temperature, then top-k (ties to the smaller id), softmax, then top-p (descending, ties by id; shortest
 *  prefix reaching top_p; renormalised). Temperature 0 is one-hot on the argmax; absent under rule 2 is 1.0
 *  (P1-NUM-1). Returns a Float64Array. */
function distribution(logits, profile) {
  const v = logits.length;
  const milli = profile.temperature_milli ?? 1000;
  const out = new Float64Array(v);
  if (milli === 0) {
    out[argmax(logits)] = 1;
    return out;
  }
  const t = milli / 1000;
  const keep = new Array(v).fill(true);
  const k = profile.top_k ?? 0;
  if (k > 0 && k < v) {
    const order = [...logits.keys()].sort((a, b) => logits[b] - logits[a] || a - b); // by value, ties to smaller id
    keep.fill(false);
    for (const id of order.slice(0, k)) keep[id] = true;
  }
  let max = -Infinity;
  for (let id = 0; id < v; id += 1) if (keep[id] && logits[id] / t > max) max = logits[id] / t;
  let total = 0;
  for (let id = 0; id < v; id += 1) if (keep[id]) total += (out[id] = Math.exp(logits[id] / t - max));
  for (let id = 0; id < v; id += 1) out[id] /= total;
  const topP = profile.top_p_milli ?? 1000;
  if (topP >= 1000) return out;
  const order = [...out.keys()].filter((id) => out[id] > 0).sort((a, b) => out[b] - out[a] || a - b);
  let mass = 0;
  let length = order.length;
  for (let n = 0; n < order.length; n += 1) {
    mass += out[order[n]];
    if (mass >= topP / 1000) { length = n + 1; break; }
  }
  const kept = new Float64Array(v);
  for (const id of order.slice(0, length)) kept[id] = out[id] / mass;
  return kept;
}

/** A uniform in [0, 1) from the CSPRNG: 53 random bits. The drafter's own randomness, never §6.4's HMAC
 *  derivation ("Drafters MUST NOT use this derivation for their own sampling"). */
function uniform() {
  return Number(crypto.randomBytes(8).readBigUInt64BE(0) >> 11n) / 2 ** 53;
}

/** P1-SAMP-2: the smallest k with u < (d[0]+...+d[k]) / sum(d), sums taken sequentially in ascending id, in
 *  binary64. ``weights`` is the published binary32 row itself (§5.2: "sample each proposed token from exactly
 *  the row it publishes"), so a zero entry can never be drawn. */
function draw(weights, u) {
  let total = 0;
  for (const w of weights) total += w;
  let running = 0;
  let last = 0;
  for (let k = 0; k < weights.length; k += 1) {
    if (weights[k] <= 0) continue;
    running += weights[k];
    last = k;
    if (u < running / total) return k;
  }
  return last;
}

export {
  PROBLEM_PREFIX, ProtocolError, argmax, b64url, chain, contractDigest, decode, distribution, draw, encode,
  parseAssignment, parseOutput, parseProblem, parseState, parseTokenList, parseVerdict, prefixDigest, uniform,
};
