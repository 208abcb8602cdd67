// Outgoing calls over HTTP/2 + TLS 1.3 with the drafter's client certificate (§5.1, P1-TLS-1, P1-ID-1): to the
// verifiers (proposals, output), the MLC (q_rows, token lists) and the router (status). One connection per
// origin, replaced after a GOAWAY, an error or a close. Every request has a deadline.

import http2 from 'node:http2';

class TransportError extends Error {}

class Origins {
  constructor(tls) {
    this.tls = tls;
    this.sessions = new Map();
  }

  session(origin) {
    let s = this.sessions.get(origin);
    if (s && !s.closed && !s.destroyed && !s.unusable) return s;
    s = http2.connect(origin, { ...this.tls, minVersion: 'TLSv1.3' });
    s.unusable = false;
    const retire = () => { s.unusable = true; if (this.sessions.get(origin) === s) this.sessions.delete(origin); };
    s.on('goaway', retire); // streams it still names complete; new requests go on a new connection
    s.on('error', retire);
    s.on('close', retire);
    s.setTimeout(60000, () => s.close());
    this.sessions.set(origin, s);
    return s;
  }

  /** One request: resolves {status, headers, body}; rejects with a TransportError on a transport failure (a
   *  reset stream, a lost connection, a GOAWAY that dropped it) or when ``timeoutMs`` passes. */
  request(method, uri, { body = null, headers = {}, timeoutMs }) {
    const url = new URL(uri);
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (fn, value) => { if (!settled) { settled = true; clearTimeout(timer); fn(value); } };
      const fail = (why) => finish(reject, new TransportError(`${method} ${uri}: ${why}`));
      const timer = setTimeout(() => { fail(`no answer within ${timeoutMs} ms`); try { stream.close(http2.constants.NGHTTP2_CANCEL); } catch { /* gone */ } }, timeoutMs);
      let stream;
      try {
        stream = this.session(url.origin).request({ ':method': method, ':path': url.pathname + url.search, ...headers },
          { endStream: body === null });
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
    for (const s of this.sessions.values()) s.destroy();
    this.sessions.clear();
  }
}

export { Origins, TransportError };
