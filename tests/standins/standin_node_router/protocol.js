// SDCP's pure parts for the stand-in router: CBOR on the wire (P1-MSG-1/2), the checks of the messages the
// router receives (status, event, the front's requests) and of the contract (§4.1), problem documents
// (RFC 9457, P1-ERR-1), and the digests of §4.1/§4.2 that a resume needs (§6.9, P1-RTR-6). No I/O.
// The CBOR helpers follow the project's stand-in verifier (testing/standin_node/protocol.js).

import crypto from 'node:crypto';
import { decode as decodeItem } from 'cbor2';
import { Encoder } from 'cbor-x';

const cbor = new Encoder({ useRecords: false, mapsAsObjects: true, variableMapSize: true, tagUint8Array: false });

export const MEDIA_TYPE = 'application/sdcp+cbor';
export const PROBLEM_PREFIX = 'urn:ietf:params:sdcp:problem:';

// Table 2 plus the profile's sdcp-bad-message (P1-MSG-2).
const PROBLEMS = {
  staleEpoch: ['sdcp-stale-epoch', 409],
  staleBase: ['sdcp-stale-base', 409],
  badContract: ['sdcp-bad-contract', 422],
  sessionClosed: ['sdcp-session-closed', 410],
  notAssigned: ['sdcp-not-assigned', 403],
  badMessage: ['sdcp-bad-message', 400],
};

/** A refusal with an SDCP problem type. */
export class ProtocolError extends Error {
  constructor(kind, detail) {
    super(detail);
    [this.suffix, this.status] = PROBLEMS[kind];
    this.detail = detail;
  }
}

/** A refusal with a plain HTTP status (404, 405, 502, 503). */
export class HttpError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
    this.detail = detail;
  }
}

export function problemBody(error) {
  const members = error instanceof ProtocolError
    ? { type: PROBLEM_PREFIX + error.suffix, title: error.suffix, status: error.status, detail: error.detail }
    : { type: 'about:blank', status: error.status, detail: error.detail };
  return Buffer.from(JSON.stringify(members));
}

export const b64url = (bytes) => Buffer.from(bytes).toString('base64url');

/** P1-MSG-3: the unpadded base64url of exactly 16 octets, else 400. */
export function pathSession(encoded) {
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) throw new ProtocolError('badMessage', `{id} ${encoded} is not unpadded base64url`);
  const bytes = Buffer.from(encoded, 'base64url');
  if (bytes.length !== 16 || b64url(bytes) !== encoded) throw new ProtocolError('badMessage', `{id} ${encoded} is not 16 octets`);
  return bytes;
}

// ------------------------------------------------------------------------------------------------ CBOR

const UINT32_LIMIT = 2 ** 32;

/** Core deterministic encoding (RFC 8949 §4.2.1, P1-MSG-1): keys sorted by encoded bytes (length first for
 *  text keys), integers shortest (cbor-x writes a Number >= 2^32 as a float, so those go as BigInt). */
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

/** Any well-formed encoding (P1-MSG-1); malformed CBOR or duplicate keys: 400 (P1-MSG-2). */
export function decode(bytes) {
  try {
    return decodeItem(bytes, { rejectDuplicateKeys: true });
  } catch (error) {
    throw new ProtocolError('badMessage', `malformed CBOR: ${error.message}`);
  }
}

/** A CBOR sequence (RFC 8742): the commit log of P1-LOG-1. Throws on malformed data. */
export function decodeSequence(bytes) {
  const items = [];
  if (!bytes.length) return items;
  return cbor.decodeMultiple(bytes) || items;
}

// ------------------------------------------------------------------------------------------------ checks

class FieldError extends Error {}

const isMap = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array);

function uint(value, path, { le, ge } = {}) {
  let n;
  if (typeof value === 'bigint') {
    if (value < 0n || value >= 2n ** 64n) throw new FieldError(`${path}: expected uint`);
    n = value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  } else if (typeof value === 'number' && Number.isInteger(value) && value >= 0) {
    n = value;
  } else {
    throw new FieldError(`${path}: expected uint`);
  }
  if (le !== undefined && n > le) throw new FieldError(`${path}: above ${le}`);
  if (ge !== undefined && n < ge) throw new FieldError(`${path}: below ${ge}`);
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

function uints(value, path, min = 0) {
  if (!Array.isArray(value) || value.length < min) throw new FieldError(`${path}: expected an array of ${min}+ uint`);
  return value.map((v, i) => uint(v, `${path}[${i}]`));
}

/** {name: [check, required]}; unknown keys ignored (§5.2) unless ``closed`` (the contract, §4.1). */
function checked(obj, members, path, closed = false) {
  if (!isMap(obj)) throw new FieldError(`${path}: expected a map`);
  if (closed) {
    const unknown = Object.keys(obj).filter((key) => !(key in members));
    if (unknown.length) throw new FieldError(`${path}: keys not defined by §4.1: ${unknown.join(', ')}`);
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

const SAMPLING = {
  temperature_milli: [(v, p) => uint(v, p), false], top_k: [(v, p) => uint(v, p), false],
  top_p_milli: [(v, p) => uint(v, p, { le: 1000 }), false], seed: [(v, p) => uint(v, p), false],
};
const LADDER = new Set([1, 2, 3, 5]); // §6.5.2: reduce, switch, self_decode, fail
const hash32s = (v, p) => { if (!Array.isArray(v) || !v.length) throw new FieldError(`${p}: expected [+ hash32]`); return v.map((d, i) => bstr(d, `${p}[${i}]`, 32)); };

const CONTRACT = {
  target: [(v, p) => bstr(v, p, 32), true], tokenizer: [(v, p) => bstr(v, p, 32), true],
  drafters: [hash32s, false], rule: [(v, p) => uint(v, p), true],
  sampling: [(v, p) => checked(v, SAMPLING, p, true), false],
  m_max: [(v, p) => uint(v, p, { le: 64 }), true], max_new: [(v, p) => uint(v, p), true],
  stop: [(v, p) => uints(v, p), true], low_rounds: [(v, p) => uint(v, p, { ge: 1 }), true],
  low_ratio: [(v, p) => uint(v, p, { le: 100 }), false],
  fallback: [(v, p) => uints(v, p, 1).map((a) => { if (!LADDER.has(a)) throw new FieldError(`${p}: ${a} is no ladder action`); return a; }), true],
  self_load: [(v, p) => uint(v, p, { le: 100 }), false], self_max: [(v, p) => uint(v, p), false],
  scope: [(v, p) => bstr(v, p, 16), false],
};

/** §4.1: the contract is closed ("A contract that contains a key not defined by this document MUST be
 *  rejected with problem type sdcp-bad-contract"). Returns the contract as decoded (forwarded unchanged). */
export function checkContract(value) {
  try {
    checked(value, CONTRACT, 'contract', true);
  } catch (error) {
    if (error instanceof FieldError) throw new ProtocolError('badContract', error.message);
    throw error;
  }
  return value;
}

const MESSAGES = {
  // §5.2 status; role 1 drafter, 2 verifier.
  status: {
    instance: [tstr, true], role: [(v, p) => { const r = uint(v, p); if (r !== 1 && r !== 2) throw new FieldError(`${p}: not 1 or 2`); return r; }, true],
    load: [(v, p) => uint(v, p, { le: 100 }), true], queue: [(v, p) => uint(v, p), true],
    accept_milli: [(v, p) => uint(v, p, { le: 1000 }), false], cache_mbps: [(v, p) => uint(v, p), false],
    ttl_ms: [(v, p) => uint(v, p), true],
  },
  // §5.2 event: kind is an action (uint); an unknown value is read as fail later (§5.2).
  event: {
    session: [(v, p) => bstr(v, p, 16), true], epoch: [(v, p) => uint(v, p), true],
    kind: [(v, p) => uint(v, p), true], committed: [(v, p) => uint(v, p), true],
    digest: [(v, p) => bstr(v, p, 32), true],
  },
  // P1-FRONT-1: {contract, prompt: [* uint] / cache-ref, ? session}
  frontOpen: {
    contract: [(v) => v, true], prompt: [(v, p) => (typeof v === 'string' ? v : uints(v, p, 1)), true],
    session: [(v, p) => bstr(v, p, 16), false],
  },
  // P1-FRONT-3: {sampling}
  frontPolicy: { sampling: [(v, p) => checked(v, SAMPLING, p), true] },
  // §5.2 session-state (answers of POST sessions and PUT …/drafter).
  state: {
    session: [(v, p) => bstr(v, p, 16), true], epoch: [(v, p) => uint(v, p), true],
    round: [(v, p) => uint(v, p), true], committed: [(v, p) => uint(v, p), true],
    digest: [(v, p) => bstr(v, p, 32), true], state: [(v, p) => uint(v, p), false],
  },
  // §5.2 output.
  output: {
    session: [(v, p) => bstr(v, p, 16), true], epoch: [(v, p) => uint(v, p), true],
    from: [(v, p) => uint(v, p), true], tokens: [(v, p) => uints(v, p), true],
    final: [(v, p) => { if (typeof v !== 'boolean') throw new FieldError(`${p}: expected bool`); return v; }, true],
    finish: [(v, p) => uint(v, p), false],
  },
};

/** Decode and check a message: 400 sdcp-bad-message for what P1-MSG-2 names; the contract is checked by
 *  the caller (422). ``value`` may be already decoded. */
export function parse(kind, bytesOrValue) {
  const value = Buffer.isBuffer(bytesOrValue) ? decode(bytesOrValue) : bytesOrValue;
  try {
    return checked(value, MESSAGES[kind], kind);
  } catch (error) {
    if (error instanceof FieldError) throw new ProtocolError('badMessage', error.message);
    throw error;
  }
}

/** The same check for a received answer; returns null instead of throwing. */
export function tryParse(kind, bytes) {
  try { return parse(kind, bytes); } catch { return null; }
}

// ------------------------------------------------------------------------------------------------ digests

const sha256 = (...parts) => crypto.createHash('sha256').update(Buffer.concat(parts)).digest();

function u32(value) {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(value);
  return out;
}

/** §4.1: SHA-256("SDCP-CONTRACT-1" || 0x00 || deterministic_cbor(contract)), over our own re-encoding (P1-MSG-1). */
export function contractDigest(contract) {
  return sha256(Buffer.from('SDCP-CONTRACT-1\0'), encode(contract));
}

/** §4.2 d[0]. */
export function prefixDigest(contract, prompt) {
  return sha256(Buffer.from('SDCP-PREFIX-1\0'), contractDigest(contract), u32(prompt.length), ...prompt.map(u32));
}

/** §4.2 d[k] = SHA-256(d[k-1] || uint32(o[k])). */
export function extendDigest(digest, tokens) {
  let current = digest;
  for (const token of tokens) current = sha256(current, u32(token));
  return current;
}

/** A token-list object (P1-MLC-2: a CBOR array of uint), or null. */
export function tokenList(bytes) {
  try {
    const value = decode(bytes);
    return Array.isArray(value) && value.every((t) => Number.isInteger(t) && t >= 0) ? value : null;
  } catch { return null; }
}
