// A free loopback port for a child process or a listener that must be told its port
// beforehand (the kernel picks it; it may be taken again before the caller binds it).
import { once } from 'node:events';
import { createServer } from 'node:net';

/** A port that was free a moment ago (the kernel picks it). */
export async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  s.close();
  await once(s, 'close');
  return port;
}
