// SDCP's pure parts that the three Node.js stand-ins (verifier, router, drafter) share: problem types and
// documents (Table 2, RFC 9457, P1-ERR-1), CBOR on the wire (P1-MSG-1/2), the member checks of §5.2 and the
// closed contract of §4.1, and the digests of §4.1/§4.2. No I/O.
//
// Installed into each stand-in's folder as node_common/ (tests/standins/node_packages.py), so that each
// resolves its npm packages from its own node_modules and a bug planted in one stand-in's copy stays there.
// Written from the draft and the profile, not translated from the Python reference.

import crypto from 'node:crypto';
import { decode as decodeItem } from 'cbor2';
import { Encoder } from 'cbor-x';

const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, variableMapSize: true, tagUint8Array: false });

export const MEDIA_TYPE = 'application/sdcp+cbor';

// ----------------------------------------------------------------------------------------------- problems

export const PROBLEM_PREFIX = 'urn:ietf:params:sdcp:problem:';
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

export class ProtocolError extends Error {
  /** A refusal with a problem type of Table 2 (or the profile's sdcp-bad-message), maybe with P1-ERR-2's state. */
  constructor(kind, detail, state = null) {
    super(detail);
    [this.suffix, this.status] = PROBLEMS[kind];
    this.detail = detail;
    this.state = state;
  }
}

export class HttpError extends Error {
  /** An answer with a plain HTTP status and no SDCP problem type (404, 405, 502, 503). */
  constructor(status, detail) {
    super(detail);
    this.status = status;
    this.detail = detail;
  }
}

export const b64url = (bytes) => Buffer.from(bytes).toString('base64url');

/** The problem document (RFC 9457 JSON, P1-ERR-1) of a ProtocolError or an HttpError. */
export function problemBody(error) {
  const members = error instanceof ProtocolError
    ? { type: PROBLEM_PREFIX + error.suffix, title: error.suffix, status: error.status, detail: error.detail }
    : { type: 'about:blank', status: error.status, detail: error.detail };
  if (error.state) {
    const state = {};
    for (const [key, value] of Object.entries(error.state)) state[key] = Buffer.isBuffer(value) ? b64url(value) : value;
    members.state = state; // P1-ERR-2
  }
  return Buffer.from(JSON.stringify(members));
}

// ----------------------------------------------------------------------------------------------- CBOR

const UINT32_LIMIT = 2 ** 32;
const UINT64_LIMIT = 2n ** 64n;

/** A value ready for cbor-x with RFC 8949 §4.2.1 core deterministic encoding (P1-MSG-1): map keys sorted by
 *  their encoded bytes (for text keys: shorter first, then bytewise), integers in their shortest form (cbor-x
 *  writes a BigInt as a uint64 and a Number at or above 2^32 as a float, so integers are handed to it as a
 *  Number below 2^32 and a BigInt from there). */
function wire(value) {
  if (typeof value === 'bigint') return value < BigInt(UINT32_LIMIT) ? Number(value) : value;
  if (typeof value === 'number') return Number.isInteger(value) && value >= UINT32_LIMIT ? BigInt(value) : value;
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

export function encode(value) {
  return cbor.encode(wire(value));
}

/** One body: any well-formed encoding (P1-MSG-1), duplicate map keys refused (P1-MSG-2). cbor2 reads all of
 *  RFC 8949 (indefinite-length strings too); cbor-x, which writes faster, does not. */
export function decode(bytes) {
  try {
    return decodeItem(bytes, { rejectDuplicateKeys: true });
  } catch (error) {
    throw new ProtocolError('badMessage', `malformed CBOR: ${error.message}`);
  }
}

/** The items of a CBOR sequence (RFC 8742): a commit log (P1-LOG-1) as the MLC serves it. Throws on malformed
 *  data. */
export function decodeSequence(bytes) {
  if (!bytes.length) return [];
  return cbor.decodeMultiple(bytes) || [];
}

// ----------------------------------------------------------------------------------------------- member checks

export class FieldError extends Error {}

export const isMap = (value) => value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Uint8Array);

export function uint(value, path, { le, ge } = {}) {
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

export function bstr(value, path, size) {
  if (!(value instanceof Uint8Array)) throw new FieldError(`${path}: expected bstr`);
  if (size !== undefined && value.length !== size) throw new FieldError(`${path}: expected bstr .size ${size}`);
  return Buffer.from(value);
}

export function tstr(value, path) {
  if (typeof value !== 'string') throw new FieldError(`${path}: expected tstr`);
  return value;
}

export function uints(value, path, minItems = 0) {
  if (!Array.isArray(value)) throw new FieldError(`${path}: expected array`);
  if (value.length < minItems) throw new FieldError(`${path}: expected at least ${minItems} items`);
  return value.map((item, index) => uint(item, `${path}[${index}]`));
}

/** A token list inline, or the URI of an MLC object holding it (P1-MLC-2). */
export const tokensOrRef = (value, path) => (typeof value === 'string' ? value : uints(value, path));

/** Checks ``obj`` against ``members`` ({name: [checker, required]}); unknown keys are ignored (§5.2) unless
 *  ``closed``. Returns the checked values. */
export function checked(obj, members, path, closed = false) {
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

/** A message (its bytes are decoded first) checked against ``members``: 400 sdcp-bad-message for what P1-MSG-2
 *  names (malformed CBOR, wrong types, out-of-range values, missing required members). */
export function parseChecked(bytesOrValue, members, path, closed = false) {
  const value = Buffer.isBuffer(bytesOrValue) ? decode(bytesOrValue) : bytesOrValue;
  try {
    return checked(value, members, path, closed);
  } catch (error) {
    if (error instanceof FieldError) throw new ProtocolError('badMessage', error.message);
    throw error;
  }
}

const SAMPLING = {
  temperature_milli: [(v, p) => uint(v, p), false], top_k: [(v, p) => uint(v, p), false],
  top_p_milli: [(v, p) => uint(v, p, { le: 1000 }), false], seed: [(v, p) => uint(v, p), false],
};

/** A sampling profile (§4.1); closed inside a contract (its digest covers it). */
export const sampling = (value, path, closed = false) => checked(value, SAMPLING, path, closed);

const LADDER = new Set([1, 2, 3, 5]); // §6.5.2: reduce, switch, self_decode, fail

const CONTRACT = {
  target: [(v, p) => bstr(v, p, 32), true], tokenizer: [(v, p) => bstr(v, p, 32), true],
  drafters: [(v, p) => { if (!Array.isArray(v) || !v.length) throw new FieldError(`${p}: expected [+ hash32]`); return v.map((d, i) => bstr(d, `${p}[${i}]`, 32)); }, false],
  rule: [(v, p) => uint(v, p), true], sampling: [(v, p) => sampling(v, p, true), false],
  m_max: [(v, p) => uint(v, p, { le: 64 }), true], max_new: [(v, p) => uint(v, p), true],
  stop: [(v, p) => uints(v, p), true], low_rounds: [(v, p) => uint(v, p, { ge: 1 }), true],
  low_ratio: [(v, p) => uint(v, p, { le: 100 }), false],
  fallback: [(v, p) => uints(v, p, 1).map((a, i) => { if (!LADDER.has(a)) throw new FieldError(`${p}[${i}]: not a ladder action`); return a; }), true],
  self_load: [(v, p) => uint(v, p, { le: 100 }), false], self_max: [(v, p) => uint(v, p), false],
  scope: [(v, p) => bstr(v, p, 16), false],
};

/** §4.1: "A contract that contains a key not defined by this document MUST be rejected" (422 sdcp-bad-contract);
 *  the sampling map inside it is closed too. Returns the checked members. */
export function checkedContract(value, path = 'contract') {
  try {
    return checked(value, CONTRACT, path, true);
  } catch (error) {
    if (error instanceof FieldError) throw new ProtocolError('badContract', error.message);
    throw error;
  }
}

/** §5.2 status (an instance's report, and a proposal's status member); role 1 drafter, 2 verifier. */
export const STATUS = {
  instance: [tstr, true], role: [(v, p) => { const r = uint(v, p); if (r !== 1 && r !== 2) throw new FieldError(`${p}: not 1 or 2`); return r; }, true],
  load: [(v, p) => uint(v, p, { le: 100 }), true], queue: [(v, p) => uint(v, p), true],
  accept_milli: [(v, p) => uint(v, p, { le: 1000 }), false], cache_mbps: [(v, p) => uint(v, p), false],
  ttl_ms: [(v, p) => uint(v, p), true],
};

// ----------------------------------------------------------------------------------------------- digests

const sha256 = (...parts) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();

export function u32(value) {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/** §4.1: SHA-256("SDCP-CONTRACT-1" || 0x00 || deterministic_cbor(contract)), over our own re-encoding. */
export function contractDigest(contract) {
  return sha256(Buffer.from('SDCP-CONTRACT-1\0'), encode(contract));
}

/** §4.2 d[0]. */
export function prefixDigest(contractDigestValue, prompt) {
  return sha256(Buffer.from('SDCP-PREFIX-1\0'), contractDigestValue, u32(prompt.length), ...prompt.map(u32));
}

/** §4.2: d[k] = SHA-256(d[k-1] || uint32(o[k])), once per token. */
export function extendDigest(digest, tokens) {
  let current = digest;
  for (const token of tokens) current = sha256(current, u32(token));
  return current;
}

/** §4.2 d[k] = SHA-256(d[k-1] || uint32(o[k])): the digests after each token, in order. */
export function chain(digest, tokens) {
  const out = [];
  let d = digest;
  for (const t of tokens) out.push(d = sha256(d, u32(t)));
  return out;
}

// ----------------------------------------------------------------------------------------------- sampling profiles

/** Argmax, ties to the smallest token id (§6.4 rule 1, §4.1 temperature zero; P1-DRF-4 greedy draft tokens). */
export function argmax(row) {
  let best = 0;
  for (let k = 1; k < row.length; k += 1) if (row[k] > row[best]) best = k;
  return best;
}

/** §4.1 top-p (P1-SAMP-1) over a distribution ``probs`` (a Float64Array), ``topP`` in thousandths: the shortest
 *  prefix by probability descending (ties by id ascending) whose sequential sum reaches top_p, renormalised by
 *  that sum; top_p 0 keeps the most probable token, 1000 every token (``probs`` itself). */
export function nucleus(probs, topP) {
  if (topP >= 1000) return probs;
  const order = [...probs.keys()].filter((id) => probs[id] > 0).sort((a, b) => probs[b] - probs[a] || a - b);
  let mass = 0;
  let length = order.length;
  for (let n = 0; n < order.length; n += 1) {
    mass += probs[order[n]];
    if (mass >= topP / 1000) { length = n + 1; break; }
  }
  const kept = new Float64Array(probs.length);
  for (const id of order.slice(0, length)) kept[id] = probs[id] / mass;
  return kept;
}
