// The admin sandbox list past its end (issue 24's survivor: `prevPage: -1` on an empty list
// past its end). An empty tier's page 3: no items, the previous page is page 0.
import t from 'tap';
import { createSandbox, serve } from '../helpers/server.js';

t.test('paging past the end of an empty list and of a short one', async (t) => {
  const s = await serve(t);
  const empty = await s.admin('GET', '/admin/api/sandboxes?tier=enterprise&page=3');
  t.equal(empty.status, 200);
  t.match(await empty.json(), { items: [], total: 0, page: 3, displayPage: 4, hasPrev: true, hasNext: false, prevPage: 0, nextPage: null });
  const first = await s.admin('GET', '/admin/api/sandboxes?tier=enterprise');
  t.match(await first.json(), { items: [], total: 0, page: 0, displayPage: 1, hasPrev: false, hasNext: false, prevPage: null, nextPage: null });
  await createSandbox(s, 'one');
  const past = await s.admin('GET', '/admin/api/sandboxes?tier=free&page=2');
  t.match(await past.json(), { total: 1, page: 2, hasPrev: true, hasNext: false, prevPage: 0, nextPage: null });
});
