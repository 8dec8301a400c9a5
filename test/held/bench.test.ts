// bench/held.ts runs end to end at a small scale (its table is bench/README.md's "Held
// requests"): every row is printed and every woken request was answered 200.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../../src/hot/paths.js';

t.setTimeout(300_000);

t.test('the held-requests bench, small', async (t) => {
  const r = spawnSync(process.execPath, [join(ROOT, 'dist/bench/held.js'), '300', '3', '30', '1'], { encoding: 'utf8', timeout: 280_000 });
  t.equal(r.status, 0, `exits 0: ${r.stderr.slice(0, 1500)} … ${r.stderr.slice(-500)}`);
  for (const row of ['RSS per held request', 'RSS per idle keep-alive connection', 'server CPU while 300 wait', 'wake, writing node, 100 held', 'wake, another node, 100 held', 'wake, storm: 3 writes at once, 300 held', '1,000,000 held']) {
    t.ok(r.stdout.includes(row), row);
  }
  t.notOk(r.stdout.includes('not all 200'), 'every woken request answered 200');
});
