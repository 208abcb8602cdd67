// SDCP's pure parts for the stand-in router: the checks of the messages the router receives (status, event, the
// front's requests, the answers of verifiers) and of the contract (§4.1), and the session ids of paths (P1-MSG-3).
// No I/O. CBOR (P1-MSG-1/2), problem documents (RFC 9457, P1-ERR-1), the member checks and the digests of
// §4.1/§4.2 that a resume needs (§6.9, P1-RTR-6) are the stand-ins' shared ones (node_common/protocol.js).

import {
  FieldError, ProtocolError, STATUS, b64url, bstr, checkedContract, decode, parseChecked, sampling, uint, uints,
} from './node_common/protocol.js';

export {
  HttpError, MEDIA_TYPE, PROBLEM_PREFIX, ProtocolError, b64url, contractDigest, decode, decodeSequence, encode,
  extendDigest, prefixDigest, problemBody,
} from './node_common/protocol.js';

/** P1-MSG-3: the unpadded base64url of exactly 16 octets, else 400. */
export function pathSession(encoded) {
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) throw new ProtocolError('badMessage', `{id} ${encoded} is not unpadded base64url`);
  const bytes = Buffer.from(encoded, 'base64url');
  if (bytes.length !== 16 || b64url(bytes) !== encoded) throw new ProtocolError('badMessage', `{id} ${encoded} is not 16 octets`);
  return bytes;
}

// ------------------------------------------------------------------------------------------------ checks

/** §4.1: the contract is closed (422 sdcp-bad-contract). Returns the contract as decoded (forwarded unchanged). */
export function checkContract(value) {
  checkedContract(value);
  return value;
}

const MESSAGES = {
  // §5.2 status; role 1 drafter, 2 verifier.
  status: STATUS,
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
  frontPolicy: { sampling: [(v, p) => sampling(v, p), true] },
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
  return parseChecked(bytesOrValue, MESSAGES[kind], kind);
}

/** The same check for a received answer; returns null instead of throwing. */
export function tryParse(kind, bytes) {
  try { return parse(kind, bytes); } catch { return null; }
}

// ------------------------------------------------------------------------------------------------ MLC objects

/** A token-list object (P1-MLC-2: a CBOR array of uint), or null. */
export function tokenList(bytes) {
  try {
    const value = decode(bytes);
    return Array.isArray(value) && value.every((t) => Number.isInteger(t) && t >= 0) ? value : null;
  } catch { return null; }
}
