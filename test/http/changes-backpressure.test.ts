// A change-feed client that stops reading: the server stops feeding its stream (uWS
// backpressure), then, once the client drains, catches it up from PostgreSQL. Every event
// arrives once, in order, and the stream goes on live afterwards.
import { connect } from 'node:net';
import t from 'tap';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { bulkUpsert } from '../../src/hot/writes/bulk.js';
import { registerProduction, serve } from '../helpers/server.js';
import { waitFor, sleep } from '../helpers/wait.js';

/** The body of a chunked HTTP/1.1 response (events are ASCII: characters are bytes). */
function dechunk(raw: string): string {
  let i = raw.indexOf('\r\n\r\n') + 4;
  let out = '';
  for (;;) {
    const eol = raw.indexOf('\r\n', i);
    if (eol < 0) return out;
    const size = parseInt(raw.slice(i, eol), 16);
    if (!size) return out;
    out += raw.slice(eol + 2, eol + 2 + size);
    i = eol + 2 + size + 2;
  }
}

t.test('a paused reader gets every event once, in order', async (t) => {
  const s = await serve(t, { env: { CHANGES_POLL_MS: '20' } });
  const sock = connect(s.server.port, '127.0.0.1');
  t.teardown(() => sock.destroy());
  await new Promise<void>((r) => sock.once('connect', () => r()));
  let text = '';
  sock.setEncoding('utf8');
  sock.on('data', (c: string) => (text += c));
  sock.write('GET /services/changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n');
  // (waits of up to a minute: on a loaded 2-core machine the stream's start and the 12 MB
  // catch-up below take long)
  await waitFor('the stream to start', () => text.includes('stream of production'), 60_000, 10);
  t.ok(text.includes('stream of production'), 'the stream started before the writes');
  sock.pause(); // stop reading: kernel buffers fill, then uWS reports backpressure

  // ~12 MB of events, far beyond what the socket buffers hold
  const N = 8000;
  const pad = 'x'.repeat(200);
  for (let b = 0; b < N; b += 1000) {
    const rows = Array.from({ length: 1000 }, (_, i) => ({
      id: `bp${String(b + i).padStart(6, '0')}`,
      input: { endpoint: 'https://bp.example.com/' + (b + i), capabilities: ['bp'], properties: { a: pad, b: pad, c: pad, d: pad, e: pad, f: pad }, iot: null, deprecated: false, locked: false, sunsetDate: null },
    }));
    await bulkUpsert(s.app.pg, PRODUCTION, rows);
  }
  await sleep(300); // the poller writes until uWS pushes back
  sock.resume();
  const last = await registerProduction(s, { endpoint: 'https://after.example.com', capabilities: ['bp'] });
  await waitFor('the last event', () => text.includes(last.id), 60_000, 20);

  const body = dechunk(text);
  const ids = [...body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  const services = [...body.matchAll(/^data: \{"id":"([^"]+)"/gm)].map((m) => m[1]);
  t.equal(ids.length, N + 1, "every event arrived");
  t.equal(new Set(ids).size, ids.length, 'no duplicate');
  t.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), 'in order');
  t.same(services.slice(0, 3), ['bp000000', 'bp000001', 'bp000002']);
  t.equal(services[N], last.id, 'then live again');
});
