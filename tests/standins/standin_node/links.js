// The stand-in verifier's calls to the MLC: objects, and the conditional commit-log append of P1-LOG-1 with the
// read-back of §6.8. The connections (node_common/links.js's Origins) carry its events and status to the router too.

import * as P from './protocol.js';
import { TransportError, parseLog } from './node_common/links.js';

// ------------------------------------------------------------------------------------------------- commit log

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

export { Origins, TransportError } from './node_common/links.js';
export { appendRecord, getObject, readLog };
