// What the stand-ins' HTTP/2 servers share (§5.1, P1-TLS-1, P1-ID-1): the server over TLS 1.3 with required
// client certificates, HTTP/1.1 refused, the peer's identity, and listening until SIGTERM or SIGINT.

import http2 from 'node:http2';
import { X509Certificate } from 'node:crypto';

const identities = new WeakMap();

/** P1-ID-1: a party's identity is its client certificate's URI SAN; read once per connection (parsing the
 *  certificate costs more than the rest of a request). */
export function peerIdentity(session) {
  if (identities.has(session)) return identities.get(session);
  const raw = session.socket.getPeerCertificate(false);
  let identity = null;
  if (raw && raw.raw) {
    const uri = (new X509Certificate(raw.raw).subjectAltName || '').split(', ').find((name) => name.startsWith('URI:'));
    identity = uri ? uri.slice(4) : null;
  }
  identities.set(session, identity);
  return identity;
}

/** §5.1 / P1-TLS-1: HTTP/2 over TLS 1.3 with a required client certificate from the CA (``tls``: cert, key, ca;
 *  ``options``: more of the server's, say its HTTP/2 settings). P1-TLS-1: "HTTP/1.1 requests (if ALPN lets them
 *  through) are refused with 505 or the connection is closed": 505, with ``http1Detail`` in a problem document if
 *  given (else no body), and the connection closed. */
export function secureServer(tls, { http1Detail = null, ...options } = {}) {
  const server = http2.createSecureServer({
    ...tls, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3', allowHTTP1: false,
    ...options,
  });
  server.on('unknownProtocol', (socket) => {
    const body = http1Detail === null ? '' : JSON.stringify({ type: 'about:blank', status: 505, detail: http1Detail });
    const type = http1Detail === null ? '' : 'content-type: application/problem+json\r\n';
    socket.end(`HTTP/1.1 505 HTTP Version Not Supported\r\n${type}connection: close\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
  });
  return server;
}

/** Listens on the base URI's port (on ``host``, else the URI's host), then calls ``listening`` and prints "serving
 *  <base URI>"; on SIGTERM or SIGINT calls ``stopping``, closes the server and its connections, and exits (at the
 *  latest ``graceMs`` later). */
export function listen(server, { baseUri, host, listening = () => {}, stopping = () => {}, graceMs = 2000 }) {
  const sessions = new Set();
  server.on('session', (session) => { sessions.add(session); session.on('close', () => sessions.delete(session)); });
  server.on('sessionError', () => {});
  const { hostname, port } = new URL(baseUri);
  server.listen(Number(port), host || hostname, () => {
    listening();
    process.stdout.write(`serving ${baseUri}\n`);
  });
  const stop = () => {
    stopping();
    server.close(() => process.exit(0));
    for (const session of sessions) session.destroy();
    setTimeout(() => process.exit(0), graceMs).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
