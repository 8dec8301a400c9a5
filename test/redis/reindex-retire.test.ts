// Reindexing over a live generation: the previous generation outlives the switch by
// RETIRE_GRACE_MS, so a search that read the old pointer just before the switch still finds
// every key of it — readers hammering a search through several reindexes only ever see the
// whole answer — and its keys are gone once the result's `retired` settles.
import t from 'tap';
import { rebuildIndex, RETIRE_GRACE_MS } from '../../src/hot/reindex/rebuild.js';
import { registerProduction, serve } from '../helpers/server.js';
import { sleep } from '../helpers/wait.js';

t.test('no search sees a dropped generation; the old keys go after the grace period', async (t) => {
  // every answer from the index itself, not from the in-process cache
  const s = await serve(t, { env: { RESULT_CACHE_ENTRIES: '0' } });
  const want: string[] = [];
  for (let i = 0; i < 30; i++) want.push((await registerProduction(s, { endpoint: `https://r${i}.example.com`, capabilities: ['retire', `r${i % 3}`] })).id);
  const path = '/services?capability=r1&capability=retire';
  const whole = JSON.stringify(want.filter((_, i) => i % 3 === 1));

  let running = true;
  const bad: string[] = [];
  let answers = 0;
  const loops = Array.from({ length: 4 }, async () => {
    while (running) {
      const r = await s.req(path);
      const body = await r.text();
      answers++;
      const got = r.status === 200 ? JSON.stringify((JSON.parse(body) as { id: string }[]).map((x) => x.id)) : '';
      if (got !== whole) bad.push(`${r.status} ${body.slice(0, 120)}`);
    }
  });

  const scan = async (gen: string) => (await s.app.redis.keys(s.app.keys.genPattern(gen))).length;
  for (let round = 0; round < 3; round++) {
    const old = s.app.index.gen!;
    const r = await rebuildIndex(s.app.pg, s.app.redis, s.app.keys, s.cfg.tiers);
    t.ok(r && r.gen !== old, `round ${round}: a new generation`);
    t.equal(r!.graceMs, RETIRE_GRACE_MS, `round ${round}: the server's threads heard the switch: the full grace`);
    // (dropping this small a generation takes a few ms: 100 ms later it would be gone; the
    // grace period is 20 times that, so a slow machine cannot make this fail wrongly)
    await sleep(100);
    t.ok((await scan(old)) > 0, `round ${round}: the previous generation is still there 100 ms after the switch`);
    await r!.retired;
    t.equal(await scan(old), 0, `round ${round}: gone once \`retired\` settles`);
  }
  running = false;
  await Promise.all(loops);
  t.ok(answers > 20, `${answers} answers read meanwhile`);
  t.same(bad, [], 'every answer was 200 and whole');
});
