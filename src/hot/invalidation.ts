// Cross-thread and cross-node invalidation of the in-process result cache: a dedicated
// subscriber connection per thread listens on the changes channel. Messages are a namespace
// (drop that namespace's results), "gen:<id>" (a rebuild switched generations: drop all),
// "lease:<uuid>" (that sandbox's tier changed: drop its rate-limit lease) or "delta\t..." (the
// sets and documents one applied write changed: the near cache follows it, index/near.ts).
// A (re)connected subscriber may have missed messages, so it drops everything too.
import { clearCaches, invalidateCaches, type App } from './app.js';

export function startInvalidation(app: App): () => Promise<void> {
  const sub = app.redis.duplicate();
  const channel = app.keys.invalidationChannel();
  const near = app.index.near;
  sub.on('error', () => undefined);
  // the near cache follows deltas: without a live subscription it must not answer (a delta
  // missed would leave a set stale for good), and after one it starts empty
  sub.on('close', () => near?.pause());
  sub.on('ready', () => {
    near?.pause();
    clearCaches(app);
    sub.subscribe(channel).then(() => near?.resume(), () => undefined);
  });
  sub.on('message', (ch: string, msg: string) => {
    if (ch !== channel) return;
    if (msg.startsWith('delta\t')) app.index.near?.onDelta(msg);
    else if (msg.startsWith('lease:')) app.auth.dropLease(msg.slice(6));
    else if (msg.startsWith('gen:')) {
      app.index.gen = msg.slice(4); // switch at once rather than at the next poll
      clearCaches(app);
    }
    else invalidateCaches(app, msg);
  });
  sub.subscribe(channel).catch(() => undefined);
  return async () => {
    await sub.quit().catch(() => sub.disconnect());
  };
}
