// The ceiling server answers with exactly the bytes it was given: status, headers in
// their order, body. A real child process on a real port, as in the bench.
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../src/hot/paths.js';
import { freePort, get, spawnNode, waitFor200 } from '../../bench/procs.js';

t.test('the ceiling serves the given response for any path', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ceiling-'));
  const body = Buffer.from(JSON.stringify([{ id: 'x', capabilities: ['a'] }]));
  const headers: [string, string][] = [
    ['Content-Type', 'application/json; charset=utf-8'],
    ['Cache-Control', 'public, max-age=5'],
    ['Vary', 'Authorization'],
    ['Link', '</services?after=3&capability=a>; rel="next"'],
  ];
  const file = join(dir, 'resp.json');
  writeFileSync(file, JSON.stringify({ status: '200 OK', headers, bodyBase64: body.toString('base64') }));
  const port = await freePort();
  const child = spawnNode(join(ROOT, 'dist/bench/ceiling.js'), [file, String(port), '2'], {}, null, join(dir, 'ceiling.log'));
  t.teardown(() => child.stop());
  await waitFor200(`http://127.0.0.1:${port}/`, child, 20_000);
  for (const path of ['/', '/services?capability=a']) {
    const r = await get(`http://127.0.0.1:${port}${path}`);
    t.equal(r.status, 200);
    t.ok(r.body.equals(body), 'same body bytes');
    const own = new Set(['date', 'uwebsockets', 'content-length', 'connection']);
    t.strictSame(r.headers.filter(([k]) => !own.has(k.toLowerCase())), headers, 'same headers, same order and case');
  }
});
