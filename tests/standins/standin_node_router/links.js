// The router's calls to other parties over HTTP/2 + TLS 1.3 with its client certificate (§5.1, P1-TLS-1):
// verifiers, drafters and the MLC. One connection per origin, reopened after a GOAWAY or an error; every
// request has a deadline (a TransportError when it passes). Adapted from the project's stand-in verifier.

import http2 from 'node:http2';
import crypto from 'node:crypto';
import * as P from './protocol.js';

export class TransportError extends Error {}

export class Origins {
  constructor(tls, timeoutMs) {
    this.tls = tls;
    this.timeoutMs = timeoutMs;
    this.sessions = new Map();
  }

  session(origin) {
    let session = this.sessions.get(origin);
    if (session && !session.closed && !session.destroyed && !session.goingAway) return session;
    session = http2.connect(origin, { ...this.tls, minVersion: 'TLSv1.3' });
    session.goingAway = false;
    session.on('goaway', () => { session.goingAway = true; });
    session.on('error', () => { session.goingAway = true; });
    session.on('close', () => { if (this.sessions.get(origin) === session) this.sessions.delete(origin); });
    session.setTimeout(60000, () => session.close());
    this.sessions.set(origin, session);
    return session;
  }

  /** One request; resolves {status, headers, body} or rejects with a TransportError (deadline, reset, TLS). */
  request(method, uri, body = null, headers = {}, timeoutMs = this.timeoutMs) {
    const url = new URL(uri);
    return new Promise((resolve, reject) => {
      let stream;
      try {
        const h = { ':method': method, ':path': url.pathname + url.search, ...headers };
        if (body !== null && !h['content-type']) h['content-type'] = P.MEDIA_TYPE;
        stream = this.session(url.origin).request(h, { endStream: body === null });
      } catch (error) {
        reject(new TransportError(`${method} ${uri}: ${error.message}`));
        return;
      }
      const chunks = [];
      let status = 0;
      let answer = {};
      const timer = setTimeout(() => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(new TransportError(`${method} ${uri}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      stream.on('response', (h) => { status = h[':status']; answer = h; });
      stream.on('data', (chunk) => chunks.push(chunk));
      stream.on('end', () => { clearTimeout(timer); resolve({ status, headers: answer, body: Buffer.concat(chunks) }); });
      stream.on('error', (error) => { clearTimeout(timer); reject(new TransportError(`${method} ${uri}: ${error.message}`)); });
      stream.on('close', () => { clearTimeout(timer); if (!status) reject(new TransportError(`${method} ${uri}: stream closed (code ${stream.rstCode})`)); });
      if (body !== null) stream.end(body);
    });
  }

  close() {
    for (const session of this.sessions.values()) session.close();
    this.sessions.clear();
  }
}

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

/** A commit log's records (P1-LOG-1: a CBOR sequence of {epoch, round, emitted, committed, digest} or {epoch}). */
export function parseLog(data) {
  let items;
  try { items = P.decodeSequence(data); } catch (error) { throw new TransportError(`the commit log is no CBOR sequence: ${error.message}`); }
  return items.map((item) => {
    if (item === null || typeof item !== 'object') throw new TransportError('a commit-log item is not a map');
    if (!('round' in item)) return { fence: true, epoch: Number(item.epoch) };
    return {
      fence: false, epoch: Number(item.epoch), round: Number(item.round), committed: Number(item.committed),
      emitted: (item.emitted || []).map(Number), digest: Buffer.from(item.digest),
    };
  });
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
