// The stand-in drafter's pure parts: the checks of the assignments, verdicts, outputs, token lists, problem
// documents and states it receives (§5.2, P1-ERR-2), the draft distribution under a sampling profile (§4.1,
// P1-SAMP-1) and the inverse-CDF draw (P1-SAMP-2). No I/O. CBOR (P1-MSG-1/2), problem types (Table 2, P1-ERR-1),
// the member checks and the digest chain (§4.1, §4.2) are the stand-ins' shared ones (node_common/protocol.js).
//
// Written from draft-sdcp.txt and PROFILE.md only.

import crypto from 'node:crypto';
import { decode as decodeItem } from 'cbor2';
import {
  FieldError, ProtocolError, argmax, bstr, checked, checkedContract, isMap, nucleus, parseChecked, sampling,
  tokensOrRef, tstr, uint, uints,
} from './node_common/protocol.js';

// ------------------------------------------------------------------------------------------------ messages

/** §5.2 assignment: the envelope first (400 sdcp-bad-message, P1-MSG-2), then the contract (422). */
function parseAssignment(bytes) {
  const a = parseChecked(bytes, {
    session: [(v, p) => bstr(v, p, 16), true], epoch: [uint, true], contract: [(v) => v, true],
    verifier: [tstr, true], drafter: [tstr, true], prompt: [tokensOrRef, true], round: [uint, true],
    sampling: [sampling, false], committed: [uint, true], digest: [(v, p) => bstr(v, p, 32), true],
    committed_tokens: [tstr, false], m_init: [uint, true],
  }, 'assignment');
  a.contract = checkedContract(a.contract);
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

// ------------------------------------------------------------------------------------------------ sampling

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
  return nucleus(out, profile.top_p_milli ?? 1000);
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
  distribution, draw, parseAssignment, parseOutput, parseProblem, parseState, parseTokenList, parseVerdict, uniform,
};
export {
  PROBLEM_PREFIX, ProtocolError, argmax, b64url, chain, contractDigest, decode, encode, prefixDigest,
} from './node_common/protocol.js';
