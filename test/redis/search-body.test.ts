// Index.searchBody (the documents joined inside search.lua, one buffer) answers exactly what
// Index.search (one string per document) does, for every kind of query, page and cursor,
// in Redis and through the worker pool.
import t from 'tap';
import type { FilterSets } from '../../src/hot/search/live-index.js';
import { PRODUCTION } from '../../src/hot/domain/keys.js';
import { registerProduction, serve } from '../helpers/server.js';

t.test('searchBody equals search, joined', async (t) => {
  // a heavy threshold of 5 sends multi-set queries over 5 members to the worker pool
  const s = await serve(t, { env: { HEAVY_INTERSECTION_THRESHOLD: '5' } });
  for (let i = 0; i < 40; i++) {
    await registerProduction(s, {
      endpoint: `https://b${i}.example.com`,
      capabilities: ['body', `m${i % 3}`, ...(i % 4 === 0 ? ['quad'] : []), ...(i % 10 === 0 ? ['tiny'] : [])],
      properties: { zone: `z${i % 2}` },
      ...(i % 5 === 0 ? { iot: { deviceClasses: ['sensor'], protocols: ['mqtt'] } } : {}),
    });
  }
  const base: FilterSets = { capabilities: [], properties: [], deviceClass: null, protocol: null, iotReady: false, healthy: false };
  const queries: [string, FilterSets][] = [
    ['everything', base],
    ['one capability', { ...base, capabilities: ['body'] }],
    ['nothing matches', { ...base, capabilities: ['no-such-capability'] }],
    ['two capabilities (pool)', { ...base, capabilities: ['body', 'm1'] }],
    ['capability + property (pool)', { ...base, capabilities: ['m0'], properties: [{ key: 'zone', value: 'z0' }] }],
    ['quad + m0 (pool)', { ...base, capabilities: ['quad', 'm0'] }],
    ['a set of 4 + others (scanned in Redis)', { ...base, capabilities: ['tiny', 'body'], properties: [{ key: 'zone', value: 'z0' }] }],
    ['iot', { ...base, iotReady: true }],
    ['device class + protocol', { ...base, deviceClass: 'sensor', protocol: 'mqtt' }],
  ];
  for (const [what, f] of queries) {
    for (const limit of [1, 7, 100]) {
      let after = '';
      for (let page = 0; page < 50; page++) {
        const a = await s.app.index.search(PRODUCTION, f, after, limit);
        const b = await s.app.index.searchBody(PRODUCTION, f, after, limit);
        t.equal(b.body.toString(), '[' + a.docs.join(',') + ']', `${what}, limit ${limit}, page ${page}: same body`);
        t.equal(b.more, a.more, `${what}, limit ${limit}, page ${page}: same more`);
        if (a.more) t.equal(b.last, a.last, `${what}, limit ${limit}, page ${page}: same cursor`);
        JSON.parse(b.body.toString());
        if (!a.more) break;
        after = a.last;
      }
    }
  }
});
