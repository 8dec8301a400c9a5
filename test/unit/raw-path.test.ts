// The server's rule for ambiguous raw paths (src/hot/domain/raw-path.ts): every path it lets
// through reads the same to nginx (decoded, resolved) as to the router; the bypass
// and its spellings are refused; ordinary paths are not.
import t from 'tap';
import fc from 'fast-check';
import { ambiguousPath } from '../../src/hot/domain/raw-path.js';
import { decodedAsIs, dotPath, nginxView } from '../helpers/dot-paths.js';

t.test('a path let through reads the same to nginx as to the router', async (t) => {
  let refused = 0;
  fc.assert(
    fc.property(dotPath, (raw) => {
      if (ambiguousPath(raw)) return void refused++;
      if (nginxView(raw) !== decodedAsIs(raw)) throw new Error(`${raw}: nginx reads ${nginxView(raw)}, the router ${decodedAsIs(raw)}`);
    }),
    { numRuns: 3000 },
  );
  t.ok(refused > 100, `some generated paths are refused (${refused})`);
});

t.test('the bypass and its spellings are refused', async (t) => {
  for (const p of [
    '/admin/api/x/..%2F..%2F..%2Fservices',
    '/admin/api/x/..%2f..%2f..%2fservices',
    '/admin/api/x/%2e%2e/%2e%2e/services',
    '/admin/api/x/%2E%2E/services',
    '/admin/api/x/.%2e/services',
    '/services/%2e',
    '/admin/api/stats/..',
    '/admin/api/stats/.',
    '/admin/./api/stats',
    '/x/../admin/api/stats',
    '/services%2Fchanges',
  ]) t.ok(ambiguousPath(p), p);
});

t.test('ordinary paths pass', async (t) => {
  for (const p of ['/', '/services', '/services/0e2b1a6c-4d0c-4b8e-9a6e-3d2f1c0b9a8e', '/admin/', '/admin/assets/index-3f2a.js', '/admin/.well-known', '/admin/x..y', '/services/a%20b', '/sandbox/x/services/batch', '/.x', '/a/...']) {
    t.notOk(ambiguousPath(p), p);
  }
});
