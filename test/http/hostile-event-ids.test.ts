// The change feed's event ids from hostile clients: a lastEventId query parameter or a
// Last-Event-ID header that does not decode to an event id is a 400 BAD_REQUEST.
import t from 'tap';
import { serve } from '../helpers/server.js';

t.test('the change feed: lastEventId and Last-Event-ID that do not decode are 400', async (t) => {
  const s = await serve(t);
  for (const q of ['%ZZ', '%', '%C0%AE', '%ED%A0%80', '%FF', 'abc', '-1', '1.5', '99999999999999999999']) {
    const r = await s.req(`/services/changes?lastEventId=${q}`);
    t.equal(r.status, 400, `lastEventId=${q}`);
    t.match(await r.json(), { error: { code: 'BAD_REQUEST' } });
  }
  // (a header value that is not UTF-8 never reaches the route: uWS hands it over empty)
  for (const h of ['abc', '%ZZ', '-1', '1e3', '1 2', '0x10']) {
    const r = await s.req('/services/changes', { headers: { 'last-event-id': h } });
    t.equal(r.status, 400, `Last-Event-ID: ${h}`);
    t.match(await r.json(), { error: { code: 'BAD_REQUEST' } });
  }
});
