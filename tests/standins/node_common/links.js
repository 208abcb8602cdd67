// The stand-ins' calls to other parties over HTTP/2 + TLS 1.3 with their client certificate (§5.1, P1-TLS-1,
// P1-ID-1): one connection per origin, reopened after a GOAWAY, an error or a close; every request has a deadline
// (a TransportError when it passes). And the commit log's records as the MLC serves them (P1-LOG-1).

import http2 from 'node:http2';
import { decodeSequence } from './protocol.js';

export class TransportError extends Error {}

export class Origins {
  /** ``tls``: cert, key, ca; ``timeoutMs``: a request's deadline unless it names one; ``contentType``: sent with
   *  a body whose headers name none (null: none). */
  constructor(tls, timeoutMs, contentType = null) {
    this.tls = tls;
    this.timeoutMs = timeoutMs;
    this.contentType = contentType;
    this.sessions = new Map();
  }

  session(origin) {
    let session = this.sessions.get(origin);
    if (session && !session.closed && !session.destroyed && !session.goingAway) return session;
    session = http2.connect(origin, { ...this.tls, minVersion: 'TLSv1.3' });
    session.goingAway = false;
    session.on('goaway', () => { session.goingAway = true; }); // streams it named still complete; new ones go elsewhere
    session.on('error', () => { session.goingAway = true; });
    session.on('close', () => { if (this.sessions.get(origin) === session) this.sessions.delete(origin); });
    session.setTimeout(60000, () => session.close());
    this.sessions.set(origin, session);
    return session;
  }

  /** One request: resolves {status, headers, body}; rejects with a TransportError on a transport failure (a
   *  reset stream, a lost connection, a GOAWAY that dropped it) or when ``timeoutMs`` passes. */
  request(method, uri, body = null, headers = {}, timeoutMs = this.timeoutMs) {
    const url = new URL(uri);
    return new Promise((resolve, reject) => {
      let settled = false;
      let stream = null;
      const finish = (settle, value) => { if (!settled) { settled = true; clearTimeout(timer); settle(value); } };
      const fail = (why) => finish(reject, new TransportError(`${method} ${uri}: ${why}`));
      const timer = setTimeout(() => {
        fail(`no answer within ${timeoutMs} ms`);
        try { stream?.close(http2.constants.NGHTTP2_CANCEL); } catch { /* gone */ }
      }, timeoutMs);
      const head = { ':method': method, ':path': url.pathname + url.search, ...headers };
      if (body !== null && this.contentType !== null && !head['content-type']) head['content-type'] = this.contentType;
      try {
        stream = this.session(url.origin).request(head, { endStream: body === null });
      } catch (error) {
        fail(error.message);
        return;
      }
      const chunks = [];
      let status = 0;
      let answer = {};
      stream.on('response', (h) => { status = h[':status']; answer = h; });
      stream.on('data', (chunk) => chunks.push(chunk));
      stream.on('end', () => { if (status) finish(resolve, { status, headers: answer, body: Buffer.concat(chunks) }); else fail('no response headers'); });
      stream.on('error', (error) => fail(error.message));
      stream.on('close', () => fail(`stream closed (code ${stream.rstCode})`));
      if (body !== null) stream.end(body);
    });
  }

  close() {
    for (const session of this.sessions.values()) session.close();
    this.sessions.clear();
  }
}

/** A commit log's records (P1-LOG-1: a CBOR sequence of {epoch, round, emitted, committed, digest} or {epoch}). */
export function parseLog(data) {
  let items;
  try { items = decodeSequence(data); } catch (error) { throw new TransportError(`the commit log is not a CBOR sequence: ${error.message}`); }
  return items.map((item) => {
    if (item === null || typeof item !== 'object') throw new TransportError('a commit-log item is not a map');
    if (!('round' in item)) return { fence: true, epoch: Number(item.epoch) };
    return {
      fence: false, epoch: Number(item.epoch), round: Number(item.round), committed: Number(item.committed),
      emitted: (item.emitted || []).map(Number), digest: Buffer.from(item.digest),
    };
  });
}
