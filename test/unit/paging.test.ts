// The admin sandbox list's query and paging fields (src/admin/paging.ts), as the dashboard
// sees them: every expected value written out by hand.
import t from 'tap';
import { MAX_PAGE, pageFields, parseListQuery } from '../../src/admin/paging.js';

const TIERS = { free: 60, pro: 600 };

t.test('paging fields inside the list', async (t) => {
  t.same(pageFields(45, 20, 0), { total: 45, pageSize: 20, page: 0, displayPage: 1, hasPrev: false, hasNext: true, prevPage: null, nextPage: 1 });
  t.same(pageFields(45, 20, 1), { total: 45, pageSize: 20, page: 1, displayPage: 2, hasPrev: true, hasNext: true, prevPage: 0, nextPage: 2 });
  t.same(pageFields(45, 20, 2), { total: 45, pageSize: 20, page: 2, displayPage: 3, hasPrev: true, hasNext: false, prevPage: 1, nextPage: null });
  t.same(pageFields(40, 20, 1), { total: 40, pageSize: 20, page: 1, displayPage: 2, hasPrev: true, hasNext: false, prevPage: 0, nextPage: null }, 'an exactly full last page');
  t.same(pageFields(41, 20, 1), { total: 41, pageSize: 20, page: 1, displayPage: 2, hasPrev: true, hasNext: true, prevPage: 0, nextPage: 2 }, 'one item more: a third page');
  t.same(pageFields(1, 20, 0), { total: 1, pageSize: 20, page: 0, displayPage: 1, hasPrev: false, hasNext: false, prevPage: null, nextPage: null });
});

t.test('a page past the end leads back to the last page that has items', async (t) => {
  t.same(pageFields(45, 20, 7), { total: 45, pageSize: 20, page: 7, displayPage: 8, hasPrev: true, hasNext: false, prevPage: 2, nextPage: null });
  t.same(pageFields(45, 20, 3), { total: 45, pageSize: 20, page: 3, displayPage: 4, hasPrev: true, hasNext: false, prevPage: 2, nextPage: null });
});

t.test('an empty list: page 0 has no neighbours, a page past its end leads back to page 0 (never -1)', async (t) => {
  t.same(pageFields(0, 20, 0), { total: 0, pageSize: 20, page: 0, displayPage: 1, hasPrev: false, hasNext: false, prevPage: null, nextPage: null });
  t.same(pageFields(0, 20, 1), { total: 0, pageSize: 20, page: 1, displayPage: 2, hasPrev: true, hasNext: false, prevPage: 0, nextPage: null });
  t.same(pageFields(0, 20, 5), { total: 0, pageSize: 20, page: 5, displayPage: 6, hasPrev: true, hasNext: false, prevPage: 0, nextPage: null });
});

t.test('the list query: tier and page, both optional', async (t) => {
  t.same(parseListQuery(null, TIERS), { tier: null, page: 0 });
  t.same(parseListQuery('', TIERS), { tier: null, page: 0 });
  t.same(parseListQuery('tier=&page=', TIERS), { tier: null, page: 0 }, 'the dashboard\'s "all tiers", first page');
  t.same(parseListQuery('tier=pro&page=3', TIERS), { tier: 'pro', page: 3 });
  t.same(parseListQuery('page=0007', TIERS), { tier: null, page: 7 });
  t.same(parseListQuery(`page=${MAX_PAGE}`, TIERS), { tier: null, page: 1_000_000 }, 'the largest page');
  t.same(parseListQuery('other=1', TIERS), { tier: null, page: 0 }, 'other parameters are ignored');
});

t.test('bad list queries: BAD_QUERY with a message saying what is wrong', async (t) => {
  const bad: [string, RegExp][] = [
    ['tier=gold', /^unknown tier "gold"; one of free, pro$/],
    ['tier=constructor', /^unknown tier "constructor"/],
    ['tier=' + 'x'.repeat(100), new RegExp(`^unknown tier "${'x'.repeat(40)}";`)],
    ['page=-1', /^page must be a whole number from 0$/],
    ['page=1.5', /^page must be a whole number from 0$/],
    ['page=abc', /^page must be a whole number from 0$/],
    ['page=12345678', /^page must be a whole number from 0$/],
    ['page=1000001', /^page must be at most 1000000$/],
    ['page=1&page=2', /^give "page" at most once$/],
    ['tier=free&tier=pro', /^give "tier" at most once$/],
  ];
  for (const [qs, message] of bad) {
    t.throws(() => parseListQuery(qs, TIERS), { code: 'BAD_QUERY', status: 400, message }, qs);
  }
});
