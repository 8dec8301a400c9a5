// GET /services/changes: the change feed as Server-Sent Events. Anonymous (or any key that
// is not a valid sandbox key, as for GET /services) = production; a valid sandbox key = that
// sandbox, counted once against its rate limit when the stream opens. Resume with the
// `Last-Event-ID` header (EventSource sends it by itself on reconnect) or `?lastEventId=`.
import type { TemplatedApp } from 'uWebSockets.js';
import { bearerKey, type SandboxAuth } from '../sandboxes/index.js';
import type { ChangeHub } from './hub.js';
import { ApiError } from '../domain/errors.js';
import { PRODUCTION } from '../domain/keys.js';
import { route, type Headers, type RouteOptions } from '../http/route.js';

/** What the change feed's route needs of its thread. */
export interface ChangesContext {
  auth: SandboxAuth;
  hub: ChangeHub;
}

export const CHANGES_PATH = '/services/changes';

/** "" or absent -> null; anything but a decimal id -> 400 */
export function parseLastEventId(header: string, query: string | null): number | null {
  let raw = header.trim();
  if (!raw && query) {
    const m = /(?:^|&)lastEventId=([^&]*)/.exec(query);
    try {
      raw = m ? decodeURIComponent(m[1]!.replace(/\+/g, ' ')) : '';
    } catch {
      // a malformed % escape or bytes that are not UTF-8: client input, so a 400
      throw new ApiError('LAST_EVENT_ID_UNDECODABLE');
    }
  }
  if (!raw) return null;
  if (!/^\d{1,15}$/.test(raw)) throw new ApiError('LAST_EVENT_ID_INVALID');
  return Number(raw);
}

export function registerChanges(uws: TemplatedApp, app: ChangesContext, o: RouteOptions): void {
  // uWS matches static segments before parameters whatever the registration order (checked
  // with this uWS build), but it is registered before /services/:id all the same
  route(uws, 'get', CHANGES_PATH, async (req, reply) => {
    const hub = app.hub;
    // refusals come before the key is counted against its rate limit; while draining, a
    // stream opened now would only be cut again
    if (hub.isClosed()) throw new ApiError('SHUTTING_DOWN', [], { 'Retry-After': '1' });
    // the slot is taken now, synchronously, before any await (concurrent opens never hold
    // one more than a cap), and given back on every way out: refusal, error, client gone,
    // stream ended (attach() resolves then)
    const release = hub.shares.reserve(req.remote);
    if (release === 'total') throw new ApiError('STREAMS_FULL', [], { 'Retry-After': '5' });
    if (release === 'address') {
      throw new ApiError('STREAMS_PER_ADDRESS', [hub.shares.perAddress], { 'Retry-After': '5' });
    }
    try {
      const after = parseLastEventId(req.extra?.['last-event-id'] ?? '', req.query);
      let ns = PRODUCTION;
      const headers: Headers = [
        ['Content-Type', 'text/event-stream; charset=utf-8'],
        ['Cache-Control', 'no-store'],
        ['Vary', 'Authorization'],
        ['X-Accel-Buffering', 'no'], // proxies must not buffer a stream
      ];
      const key = req.authorization ? bearerKey(req.authorization) : '';
      const uuid = key ? await app.auth.resolve(key) : null;
      if (uuid) {
        ns = uuid;
        headers.push(...(await app.auth.limitOrThrow(uuid)));
      }
      const start = after ?? (await hub.latest());
      // `retry:` tells EventSource how long to wait before reconnecting
      if (!reply.begin(200, headers, `retry: 2000\n: stream of ${ns === PRODUCTION ? 'production' : 'sandbox'} changes after ${start}\n\n`)) return;
      await hub.attach(reply, ns, start);
    } finally {
      release();
    }
  }, { ...o, headers: ['last-event-id'], remote: true }); // the client address: per-address share
}
