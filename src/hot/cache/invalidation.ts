// Cross-thread and cross-node invalidation of the in-process result cache: a dedicated
// subscriber connection per thread listens on the changes channel. Messages are a namespace
// (drop that namespace's results), "gen:<id>" (a rebuild switched generations: drop all)
// or "lease:<uuid>" (that sandbox's tier changed: drop its rate-limit lease).
// A (re)connected subscriber may have missed messages, so it drops everything too.
import { clearCaches, invalidateCaches, type App } from '../app.js';

export function startInvalidation(app: App): () => Promise<void> {
  const sub = app.redis.duplicate();
  const channel = app.keys.invalidationChannel();
  sub.on('error', () => undefined);
  sub.on('ready', () => clearCaches(app));
  sub.on('message', (ch: string, msg: string) => {
    if (ch !== channel) return;
    if (msg.startsWith('lease:')) app.auth.dropLease(msg.slice(6));
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
