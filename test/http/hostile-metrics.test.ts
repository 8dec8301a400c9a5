// The metrics listener (METRICS_PORT) under hostile raw requests: any method, path, query and
// Accept value (test/helpers/hostile-requests.ts) is answered without a 5xx, and a 4xx with a
// body carries the contract's error body.
import t from 'tap';
import fc from 'fast-check';
import { serve } from '../helpers/server.js';
import { METHODS, check, headerValue, query, segment } from '../helpers/hostile-requests.js';
import { rawClient } from '../helpers/raw-client.js';

t.test('the metrics listener: any request is answered without a 5xx', async (t) => {
  const s = await serve(t);
  const c = rawClient(t, s.metricsPort!);
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...METHODS),
      fc.oneof(fc.constant(Buffer.from('/metrics')), segment(['metrics', '', 'services']).map((b) => Buffer.concat([Buffer.from('/'), b]))),
      query,
      headerValue(['text/plain', 'application/openmetrics-text']),
      async (method, path, q, accept) => {
        const head = Buffer.concat([Buffer.from(`${method} `), path, q === null ? Buffer.alloc(0) : Buffer.concat([Buffer.from('?'), q]), Buffer.from(` HTTP/1.1\r\nHost: x\r\n`), Buffer.from(`Accept: ${accept}\r\n\r\n`, 'latin1')]);
        const r = await c.request(head, Buffer.alloc(0), method === 'HEAD');
        seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
        check(r, `metrics ${method} ${path.toString('latin1')}`);
      },
    ),
    { numRuns: 150 },
  );
  t.ok((seen.get(200) ?? 0) > 0 && (seen.get(404) ?? 0) > 0, `answers: ${JSON.stringify(Object.fromEntries(seen))}`);
  t.equal((await s.metrics()).status, 200);
});
