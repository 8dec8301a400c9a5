// The pool path's sets (src/hot/search/pipeline/sets.ts, FetchedSets): held by key at the
// namespace version they were read at, a set read at another version is not answered, and
// at most `max` are held, the least recently used out first.
import t from 'tap';
import { FetchedSets, FETCHED_MAX } from '../../src/hot/search/pipeline/sets.js';

const arr = (...xs: number[]) => Float64Array.from(xs);

t.test('held at a version, answered only at that version', async (t) => {
  const f = new FetchedSets();
  const a = arr(1, 2, 3);
  f.keep('k:a', '7', a);
  t.equal(f.get(['k:a'], '7')[0], a, 'the very array, at its version');
  t.same(f.get(['k:a', 'k:b'], '8'), [null, null], 'another version: read again');
  t.same(f.get(['k:b', 'k:a'], '7'), [null, a], 'in the order asked, null where not held');
  const b = arr(4);
  f.keep('k:a', '8', b);
  t.equal(f.size, 1, 'kept again at the new version: one entry');
  t.equal(f.get(['k:a'], '8')[0], b);
});

t.test('bounded: the least recently used goes first', async (t) => {
  t.equal(FETCHED_MAX, 64, 'as many as a worker kept before');
  const f = new FetchedSets(3);
  for (const k of ['a', 'b', 'c']) f.keep(k, '1', arr(1));
  f.get(['a'], '1'); // a used: b is now the oldest
  f.keep('d', '1', arr(2));
  t.equal(f.size, 3, 'never more than max');
  t.same(f.get(['a', 'b', 'c', 'd'], '1').map((x) => x !== null), [true, false, true, true], 'b went, a stayed');
  f.clear();
  t.equal(f.size, 0);
});
