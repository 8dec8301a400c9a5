// Every bench request must be canonical: otherwise the server answers 302 and the bench
// measures redirects. Checked with the server's own canonicalizer, cursors included.
import t from 'tap';
import { canonicalize, DEVICES_SPEC, SEARCH_SPEC } from '../../src/hot/search/canonical.js';
import { FULL } from '../../bench/dataset.js';
import type { BenchData } from '../../bench/generate.js';
import { paths, scenarios, uncached } from '../../bench/scenarios.js';

const data = {
  spec: FULL,
  stored: { deprecatedId: 'AbCdEfGhIjKlMnOp' },
  sandbox: { capability: 'cap.0001', matches: 29, key: 'bench_sb_x' },
  facts: {
    popularCapability: 'cap.0001',
    midCapability: 'cap.0051',
    heavyCapabilities: ['cap.0001', 'cap.0002', 'cap.0003'],
    property: 'region:eu-west',
    deviceClass: 'sensor',
    sizes: {},
  },
} as unknown as BenchData;

t.test('every scenario path is canonical, with or without cursors', async (t) => {
  const list = scenarios(data);
  t.ok(list.some((s) => s.cursorMax), 'there is an uncached scenario');
  for (const s of [...list, uncached(list[1]!, 100_000, 'a2c', 'x')]) {
    const next = paths(s, 3);
    for (let i = 0; i < 50; i++) {
      const p = next();
      const [path, query] = p.split('?') as [string, string | undefined];
      if (path.endsWith('/replacements')) continue; // no query
      const c = canonicalize(path, query ?? null, path === '/devices' ? DEVICES_SPEC : SEARCH_SPEC);
      if (c.kind !== 'ok' || c.canonical !== (query ?? '')) t.fail(`${s.id}: ${p} is not canonical (${JSON.stringify(c)})`);
    }
  }
  t.pass('all canonical');
});

t.test('cursor streams: deterministic per seed, different across seeds, in range', async (t) => {
  const c2 = scenarios(data).find((s) => s.id === 'c2')!;
  const take = (seed: number) => Array.from({ length: 20 }, paths(c2, seed));
  t.strictSame(take(5), take(5));
  t.notSame(take(5), take(6), 'a measured run does not replay the warm-up');
  for (const p of take(7)) {
    const after = Number(/after=(\d+)/.exec(p)![1]);
    t.ok(after >= 1 && after <= FULL.production, `after=${after}`);
  }
  const a1 = scenarios(data)[0]!;
  t.strictSame(take(1).length, 20);
  t.equal(paths(a1, 9)(), a1.path, 'a cached scenario always sends its one path');
});
