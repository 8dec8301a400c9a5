// A tiny loopback TCP proxy that can cut a connection path (refuse, or black-hole) to one
// server without touching the server itself: a server gone away, or a network partition.
import { once } from 'node:events';
import { createServer, connect, type Server as NetServer, type Socket } from 'node:net';

export type ProxyMode = 'pass' | 'refuse' | 'blackhole';

export interface TcpProxy {
  port: number;
  mode: ProxyMode;
  /**
   * pass: forward. refuse: drop every connection and refuse new ones (the server went
   * away). blackhole: keep connections open but hold every byte (a network partition: TCP
   * keeps the bytes, so they arrive, in order, once it passes again).
   */
  set(mode: ProxyMode): Promise<void>;
  close(): Promise<void>;
}

/** A loopback TCP proxy in front of 127.0.0.1:targetPort. */
export async function startProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let mode: ProxyMode = 'pass';
  let server: NetServer | null = null;
  let port = 0;
  const onConn = (client: Socket) => {
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.on('error', drop);
      from.on('close', drop);
      from.on('data', (d) => to.write(d));
      if (mode === 'blackhole') from.pause();
    }
  };
  const listen = async () => {
    server = createServer(onConn);
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  };
  const unlisten = async () => {
    const s = server;
    server = null;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  };
  const dropAll = () => {
    for (const [a, b] of pairs) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
  };
  await listen();
  return {
    get port() {
      return port;
    },
    get mode() {
      return mode;
    },
    async set(next) {
      mode = next;
      for (const [a, b] of pairs) {
        if (next === 'blackhole') {
          a.pause();
          b.pause();
        } else {
          a.resume();
          b.resume();
        }
      }
      if (next === 'refuse') {
        dropAll();
        await unlisten();
      } else if (!server) await listen();
    },
    async close() {
      mode = 'refuse';
      dropAll();
      await unlisten();
    },
  };
}
