// Cross-thread and cross-node invalidation of the in-process result cache: a dedicated
// subscriber connection per thread listens on the changes channel. Messages are a namespace
// (drop that namespace's results), "gen:<id>" (a rebuild switched generations: drop all)
// or "lease:<uuid>" (that sandbox's tier changed: drop its rate-limit lease).
// A (re)connected subscriber may have missed messages, so it drops everything too.
import { clearCaches, invalidateCaches, type App } from './app.js';
import { countProjectorFailure } from './metrics.js';

export function startInvalidation(app: App): () => Promise<void> {
  const sub = app.redis.duplicate();
  const channel = app.keys.invalidationChannel();
  // connection errors repeat on every reconnection attempt: one line per outage
  let down = false;
  sub.on('error', (err: unknown) => {
    if (down) return;
    down = true;
    countProjectorFailure('invalidate');
    app.log.warn({ err: String(err) }, 'cache invalidation subscriber lost Redis; cached results are dropped when it is back');
  });
  sub.on('ready', () => {
    down = false;
    clearCaches(app);
  });
  sub.on('message', (ch: string, msg: string) => {
    if (ch !== channel) return;
    if (msg.startsWith('lease:')) app.auth.dropLease(msg.slice(6));
    else if (msg.startsWith('gen:')) {
      app.index.gen = msg.slice(4); // switch at once rather than at the next poll
      clearCaches(app);
    }
    else invalidateCaches(app, msg);
  });
  sub.subscribe(channel).catch((err: unknown) => {
    countProjectorFailure('invalidate');
    app.log.warn({ err: String(err) }, 'cache invalidation subscribe failed: this thread sees other writes only after RESULT_CACHE_TTL_MS');
  });
  return async () => {
    await sub.quit().catch(() => sub.disconnect());
  };
}
