// The router's calls to other parties (verifiers, drafters and the MLC) over the stand-ins' shared connections
// (node_common/links.js): answers and problem documents read, MLC objects, the fence of §6.8/§6.9 appended to a
// commit log, and the records a resume counts (P1-RTR-6).

import crypto from 'node:crypto';
import * as P from './protocol.js';
import { TransportError, parseLog } from './node_common/links.js';

export { Origins, TransportError } from './node_common/links.js';

export const ok = (reply) => reply.status >= 200 && reply.status < 300; // P1-MSG-4: any 2xx is success

/** The problem type suffix of a refusal (P1-ERR-1: after the last ':' or '/'), or null. */
export function problemType(reply) {
  try {
    const type = JSON.parse(reply.body.toString('utf8')).type;
    return typeof type === 'string' ? type.split(/[:/]/).at(-1) : null;
  } catch {
    try { const t = P.decode(reply.body).type; return typeof t === 'string' ? t.split(/[:/]/).at(-1) : null; } catch { return null; }
  }
}

/** The problem document's members (for P1-ERR-2's `state`), or null. */
export function problemMembers(reply) {
  try { return JSON.parse(reply.body.toString('utf8')); } catch { /* maybe CBOR */ }
  try { return P.decode(reply.body); } catch { return null; }
}

// -------------------------------------------------------------------------------------- MLC objects (P1-MLC-1)

/** GET an object: {data, etag} or null when it does not exist (404). */
export async function getObject(origins, uri) {
  const reply = await origins.request('GET', uri);
  if (reply.status === 404) return null;
  if (!ok(reply)) throw new TransportError(`GET ${uri} answered ${reply.status}`);
  return { data: reply.body, etag: reply.headers.etag ?? null };
}

/** PUT a token list (P1-MLC-2: a CBOR array of uint) under a fresh name next to the log; returns its URI. */
export async function putTokens(origins, cache, session, tokens) {
  const uri = `${cache}sdcp-router/${session.toString('hex')}/tokens-${tokens.length}-${crypto.randomBytes(6).toString('hex')}`;
  const reply = await origins.request('PUT', uri, P.encode(tokens), { 'content-type': 'application/cbor' });
  if (!ok(reply)) throw new TransportError(`PUT ${uri} answered ${reply.status}`);
  return uri;
}

const MAX_CONFLICTS = 32;

/** §6.8/§6.9/P1-LOG-1: append the fence {epoch} conditionally (If-Match on the ETag read, If-None-Match: *
 *  when the log does not exist yet, P1-LOG-3); on 412 read again and retry. A fence of this epoch or higher
 *  already in the log (a retried PUT that landed) counts as appended. Returns the log's records as they stood
 *  right after our fence. */
export async function appendFence(origins, uri, epoch) {
  const fence = P.encode({ epoch });
  for (let conflicts = 0; conflicts <= MAX_CONFLICTS; conflicts += 1) {
    const before = await getObject(origins, uri);
    const data = before ? before.data : Buffer.alloc(0);
    const records = parseLog(data);
    if (records.some((r) => r.fence && r.epoch >= epoch)) return records;
    if (before && !before.etag) throw new TransportError(`GET ${uri} answered without an ETag`);
    const headers = before ? { 'if-match': before.etag } : { 'if-none-match': '*' };
    headers['content-type'] = 'application/cbor-seq';
    const reply = await origins.request('PUT', uri, Buffer.concat([data, fence]), headers);
    if (reply.status === 412) continue; // another writer appended since we read: read again (P1-LOG-1)
    if (!ok(reply)) throw new TransportError(`PUT ${uri} (fence ${epoch}) answered ${reply.status}`);
    return [...records, { fence: true, epoch }];
  }
  throw new TransportError(`${uri}: gave up after ${MAX_CONFLICTS} conflicting appends`);
}

/** P1-RTR-6: the commit records no fence of a higher epoch precedes; the last of them, and their tokens. */
export function countedRecords(records) {
  let highestFence = 0;
  const counted = [];
  for (const record of records) {
    if (record.fence) { highestFence = Math.max(highestFence, record.epoch); continue; }
    if (record.epoch >= highestFence) counted.push(record);
  }
  return { last: counted.at(-1) || null, tokens: counted.flatMap((r) => r.emitted) };
}
