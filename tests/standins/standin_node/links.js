// The stand-in verifier's calls to other parties over HTTP/2 + TLS 1.3 with its client certificate: the MLC
// (objects, the conditional commit-log append of P1-LOG-1 with the read-back of §6.8) and the router (events,
// status). One connection per origin, reopened after a GOAWAY or an error; every request has a deadline.

import http2 from 'node:http2';
import * as P from './protocol.js';

class TransportError extends Error {}

class Origins {
  constructor(tls, timeoutMs) {
    this.tls = tls;
    this.timeoutMs = timeoutMs;
    this.sessions = new Map();
  }

  session(origin) {
    let session = this.sessions.get(origin);
    if (session && !session.closed && !session.destroyed && !session.goingAway) return session;
    session = http2.connect(origin, { ...this.tls, minVersion: 'TLSv1.3', servername: undefined });
    session.goingAway = false;
    session.on('goaway', () => { session.goingAway = true; }); // streams it named still complete; new ones go elsewhere
    session.on('error', () => { session.goingAway = true; });
    session.on('close', () => { if (this.sessions.get(origin) === session) this.sessions.delete(origin); });
    session.setTimeout(60000, () => session.close());
    this.sessions.set(origin, session);
    return session;
  }

  /** One request; resolves {status, headers, body} or rejects with a TransportError at the deadline. */
  request(method, uri, body = null, headers = {}) {
    const url = new URL(uri);
    return new Promise((resolve, reject) => {
      let stream;
      try {
        stream = this.session(url.origin).request({ ':method': method, ':path': url.pathname + url.search, ...headers },
          { endStream: body === null });
      } catch (error) {
        reject(new TransportError(`${method} ${uri}: ${error.message}`));
        return;
      }
      const chunks = [];
      let status = 0;
      let answer = {};
      const timer = setTimeout(() => { stream.close(http2.constants.NGHTTP2_CANCEL); reject(new TransportError(`${method} ${uri}: no answer within ${this.timeoutMs} ms`)); }, this.timeoutMs);
      stream.on('response', (h) => { status = h[':status']; answer = h; });
      stream.on('data', (chunk) => chunks.push(chunk));
      stream.on('end', () => { clearTimeout(timer); resolve({ status, headers: answer, body: Buffer.concat(chunks) }); });
      stream.on('error', (error) => { clearTimeout(timer); reject(new TransportError(`${method} ${uri}: ${error.message}`)); });
      if (body !== null) stream.end(body);
    });
  }

  close() {
    for (const session of this.sessions.values()) session.close();
    this.sessions.clear();
  }
}

// ------------------------------------------------------------------------------------------------- commit log

/** A commit log's records (P1-LOG-1: a CBOR sequence of {epoch, round, emitted, committed, digest} or {epoch}). */
function parseLog(data) {
  const records = [];
  if (!data.length) return records;
  let items;
  try {
    items = P.decodeSequence(data);
  } catch (error) {
    throw new TransportError(`the commit log is not a CBOR sequence: ${error.message}`);
  }
  for (const item of items) {
    if (item === null || typeof item !== 'object') throw new TransportError('a commit-log item is not a map');
    const epoch = Number(item.epoch);
    records.push('round' in item ? { epoch, round: Number(item.round), digest: Buffer.from(item.digest), fence: false }
      : { epoch, fence: true });
  }
  return records;
}

function highestFence(records) {
  let highest = null;
  for (const record of records) if (record.fence && (highest === null || record.epoch > highest)) highest = record.epoch;
  return highest;
}

const MAX_CONFLICTS = 32;

/** P1-LOG-1's conditional append with §6.8's read-back; resolves 'appended' or 'fenced', rejects otherwise.
 *  ``read`` is the first GET of the log, which the caller may have started early (any later write makes the
 *  If-Match PUT fail with 412, and the log is read again). */
async function appendRecord(origins, uri, record, read = readLog(origins, uri)) {
  const encoded = P.encode(record);
  let first = read;
  for (let conflicts = 0; conflicts <= MAX_CONFLICTS; conflicts += 1) {
    const before = await (first || readLog(origins, uri));
    first = null;
    const fence = highestFence(before.records);
    if (fence !== null && record.epoch < fence) return 'fenced';
    const headers = before.etag === null ? { 'if-none-match': '*' } : { 'if-match': before.etag };
    const reply = await origins.request('PUT', uri, Buffer.concat([before.data, encoded]), headers);
    if (reply.status === 412) continue;
    if (reply.status === 409) return 'fenced'; // P1-LOG-2: an enforcing cache refused it
    if (reply.status < 200 || reply.status >= 300) throw new TransportError(`PUT ${uri} answered ${reply.status}`);
    const after = await readLog(origins, uri);
    const index = after.records.findIndex((r) => !r.fence && r.epoch === record.epoch && r.round === record.round && r.digest.equals(record.digest));
    if (index < 0) throw new TransportError(`${uri}: the read-back log lacks the appended record`);
    const preceding = highestFence(after.records.slice(0, index));
    return preceding !== null && record.epoch < preceding ? 'fenced' : 'appended';
  }
  throw new TransportError(`${uri}: gave up after ${MAX_CONFLICTS} conflicts`);
}

async function readLog(origins, uri) {
  const reply = await origins.request('GET', uri);
  if (reply.status === 404) return { data: Buffer.alloc(0), etag: null, records: [] }; // P1-LOG-3
  if (reply.status !== 200) throw new TransportError(`GET ${uri} answered ${reply.status}`);
  if (!reply.headers.etag) throw new TransportError(`GET ${uri} answered without an ETag`);
  return { data: reply.body, etag: reply.headers.etag, records: parseLog(reply.body) };
}

/** An object's bytes, or a TransportError. */
async function getObject(origins, uri) {
  const reply = await origins.request('GET', uri);
  if (reply.status !== 200) throw new TransportError(`GET ${uri} answered ${reply.status}`);
  return reply.body;
}

export { Origins, TransportError, appendRecord, getObject, readLog };
