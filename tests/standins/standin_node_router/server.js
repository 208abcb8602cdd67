// The stand-in SDCP router's HTTP/2 server (§5.1: HTTP/2 over TLS 1.3 with mutual certificates, P1-TLS-1):
// the router resources of Table 1 (PUT instances/{id}/status, POST events) and the test front of PROFILE.md
// (P1-FRONT-1..3) on the router's base URI. Command line as `sdcp-conformance serve router`:
//   node server.js --pki DIR --party NAME --cache URI --verifier URI... --drafter URI=MODEL... [--host H]
// MODEL is a 64-hex SHA-256 of model.safetensors (P1-HASH-1) or a model folder (its launcher,
// tests.standins.standin_node_router, turns mock model ids into digests). Prints "serving <base URI>"
// once it listens.

import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { parseArgs } from 'node:util';
import * as P from './protocol.js';
import { Router } from './router.js';
import { listen, peerIdentity, secureServer } from './node_common/server.js';

function modelDigest(model) {
  if (/^[0-9a-fA-F]{64}$/.test(model)) return model.toLowerCase();
  const file = path.join(model, 'model.safetensors');
  if (fs.existsSync(file)) return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  throw new Error(`${model}: not a SHA-256 in hex nor a model folder`);
}

function configure() {
  const { values } = parseArgs({
    options: {
      pki: { type: 'string' }, party: { type: 'string', default: 'router' }, cache: { type: 'string' },
      verifier: { type: 'string', multiple: true, default: [] }, drafter: { type: 'string', multiple: true, default: [] },
      host: { type: 'string', default: '127.0.0.1' },
    },
  });
  if (!values.pki || !values.cache || !values.verifier.length || !values.drafter.length) {
    throw new Error('usage: server.js --pki DIR [--party NAME] --cache URI --verifier URI... --drafter URI=MODEL...');
  }
  const pki = JSON.parse(fs.readFileSync(path.join(values.pki, 'pki.json'), 'utf8'));
  const tls = {
    cert: fs.readFileSync(path.join(values.pki, 'parties', `${values.party}.pem`)),
    key: fs.readFileSync(path.join(values.pki, 'parties', `${values.party}.key`)),
    ca: fs.readFileSync(path.join(values.pki, 'ca.pem')),
  };
  const drafters = values.drafter.map((spec) => {
    const at = spec.lastIndexOf('=');
    return { uri: spec.slice(0, at), model: modelDigest(spec.slice(at + 1)) };
  });
  return {
    base_uri: pki.parties[values.party], host: values.host, cache: values.cache, verifiers: values.verifier,
    drafters, tls, call_timeout_ms: 5000,
  };
}

const cbor = (body, status = 200) => ({ status, body: P.encode(body), type: P.MEDIA_TYPE });

/** Routes one request; returns {status, body, type} and maybe ``after`` (work done once the answer is sent). */
async function handle(router, base, method, fullPath, query, body, peer) {
  if (!fullPath.startsWith(base)) throw new P.HttpError(404, `no resource at ${fullPath}`);
  const rest = fullPath.slice(base.length);
  let parts = rest.split('/');
  if (rest.startsWith('client/sessions/')) {
    // P1-MSG-3: the {id} is whatever lies between "client/sessions/" and a known suffix, so that an id with
    // a "/" of the standard alphabet, or padding, is judged as an id (400), not as an unknown path (404).
    const tail = rest.slice('client/sessions/'.length);
    const suffix = ['/output', '/policy'].find((s) => tail.endsWith(s)) || '';
    parts = ['client', 'sessions', tail.slice(0, tail.length - suffix.length), ...(suffix ? [suffix.slice(1)] : [])];
  }
  const route = `${method} ${parts.map((p, i) => ((parts[0] === 'instances' && i === 1) || (parts[0] === 'client' && i === 2) ? '*' : p)).join('/')}`;
  switch (route) {
    case 'PUT instances/*/status':
      router.status(parts[1], body, peer);
      return { status: 204, body: Buffer.alloc(0) };
    case 'POST events': {
      const after = router.event(body, peer);
      return { status: 204, body: Buffer.alloc(0), after };
    }
    case 'POST client/sessions': {
      const answer = await router.frontOpen(body);
      return cbor(answer.body, answer.status);
    }
    case 'GET client/sessions/*':
      return cbor(router.describe(P.pathSession(parts[2])));
    case 'GET client/sessions/*/output': {
      const id = P.pathSession(parts[2]);
      const from = new URLSearchParams(query).getAll('from');
      if (from.length > 1 || (from.length === 1 && !/^[0-9]+$/.test(from[0]))) throw new P.ProtocolError('badMessage', 'from must be one non-negative integer');
      return cbor(await router.frontOutput(id, from.length ? Number(from[0]) : 0));
    }
    case 'POST client/sessions/*/policy':
      return cbor(await router.frontPolicy(P.pathSession(parts[2]), body));
    default:
      throw new P.HttpError(404, `${method} ${fullPath} is not a router resource`);
  }
}

function main() {
  const config = configure();
  const router = new Router(config);
  const base = new URL(config.base_uri).pathname;
  const server = secureServer(config.tls, { http1Detail: 'SDCP requires HTTP/2 (P1-TLS-1)' });
  server.on('stream', (stream, headers) => {
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    stream.on('error', () => {});
    stream.on('data', (chunk) => {
      size += chunk.length;
      if (size > 16 << 20) tooLarge = true; else chunks.push(chunk); // P1-MSG-2: over 16 MiB may be 413
    });
    stream.on('end', async () => {
      const [rawPath, query = ''] = (headers[':path'] || '/').split('?');
      let answer;
      try {
        if (tooLarge) throw new P.HttpError(413, 'body over 16 MiB');
        answer = await handle(router, base, headers[':method'], rawPath, query, Buffer.concat(chunks), peerIdentity(stream.session));
      } catch (error) {
        if (!(error instanceof P.ProtocolError || error instanceof P.HttpError)) router.log(error.stack || error.message);
        const status = error.status || 500;
        answer = { status, body: P.problemBody(error.status ? error : new P.HttpError(500, error.message)), type: 'application/problem+json' };
      }
      if (!stream.destroyed && !stream.closed) {
        const h = { ':status': answer.status };
        if (answer.type) { h['content-type'] = answer.type; h['content-length'] = answer.body.length; }
        stream.respond(h, { endStream: !answer.body.length });
        if (answer.body.length) stream.end(answer.body);
      }
      if (answer.after) answer.after();
    });
  });
  listen(server, { baseUri: config.base_uri, host: config.host, stopping: () => router.close() });
}

main();
