// The attacker of the hostile-load bench (bench/hostile.ts), from its own loopback address:
// sockets held open (slow bodies trickled a byte at a time, change-feed streams) with the
// status line each got, floods of GETs over 32 keep-alive connections, and senders of large
// bodies that each take a new connection (a refused credential closes it).
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';

export const ATTACKER = '127.0.0.2';

/** Attack sockets: each reports the status line it got (or '' while held open). */
export class Attack {
  sockets: Socket[] = [];
  firstLines: string[] = [];
  private timers: NodeJS.Timeout[] = [];

  open(port: number, head: string, trickle: boolean): Promise<void> {
    return new Promise((resolve) => {
      const i = this.firstLines.push('') - 1;
      const s = connect({ port, host: '127.0.0.1', localAddress: ATTACKER });
      this.sockets.push(s);
      s.on('data', (d) => {
        if (!this.firstLines[i]) this.firstLines[i] = d.toString('latin1').split('\r\n')[0]!;
      });
      s.on('error', () => undefined);
      s.on('close', () => {
        if (!this.firstLines[i]) this.firstLines[i] = 'closed';
      });
      s.once('connect', () => {
        s.write(head);
        if (trickle) this.timers.push(setInterval(() => s.writable && s.write(' '), 4000));
        resolve();
      });
      s.once('error', () => resolve());
    });
  }

  summary(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const l of this.firstLines) {
      const k = l === '' ? 'held open' : l.startsWith('HTTP/') ? l.split(' ')[1]! : l;
      out[k] = (out[k] ?? 0) + 1;
    }
    return out;
  }

  end(): void {
    for (const t of this.timers) clearInterval(t);
    for (const s of this.sockets) s.destroy();
  }
}

export async function openMany(a: Attack, port: number, n: number, head: string, trickle: boolean): Promise<void> {
  for (let i = 0; i < n; i += 100) await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => a.open(port, head, trickle)));
}

export const SLOW_BODY = 'POST /sandboxes HTTP/1.1\r\nHost: registry\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{';
export const FEED = 'GET /services/changes HTTP/1.1\r\nHost: registry\r\nAccept: text/event-stream\r\n\r\n';

/**
 * GETs from ATTACKER over 32 keep-alive connections until `end` (a Date.now() time), the i-th
 * one `next(i)` (null: no more to send). Resolves when all are answered, with the requests
 * sent and the statuses they got.
 */
export async function flood(port: number, end: number, next: (i: number) => { path: string; headers?: Record<string, string> } | null): Promise<{ sent: number; statuses: Record<string, number> }> {
  let sent = 0;
  const statuses: Record<string, number> = {};
  const agent = new Agent({ keepAlive: true, maxSockets: 32, localAddress: ATTACKER } as ConstructorParameters<typeof Agent>[0] & { localAddress: string });
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (Date.now() < end) {
      const req = next(sent);
      if (!req) break;
      sent++;
      await new Promise<void>((resolve) => {
        const r = request({ host: '127.0.0.1', port, path: req.path, agent, headers: req.headers }, (res) => {
          statuses[String(res.statusCode)] = (statuses[String(res.statusCode)] ?? 0) + 1;
          res.resume();
          res.on('end', resolve);
        });
        r.on('error', () => resolve());
        r.end();
      });
    }
  }));
  agent.destroy();
  return { sent, statuses };
}

/**
 * `conns` senders from ATTACKER, each sending `head(i)` + `body` on a new connection, waiting
 * for its answer (or the close), and again until `end` (a Date.now() time). Resolves with the
 * requests sent and the status each got ('closed' without an answer).
 */
export async function bodyFlood(port: number, end: number, conns: number, head: (i: number) => string, body: Buffer): Promise<{ sent: number; statuses: Record<string, number> }> {
  let sent = 0;
  const statuses: Record<string, number> = {};
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const s = connect({ port, host: '127.0.0.1', localAddress: ATTACKER });
      let over = false;
      const done = (line: string) => {
        if (over) return;
        over = true;
        const k = line.startsWith('HTTP/') ? line.split(' ')[1]! : 'closed';
        statuses[k] = (statuses[k] ?? 0) + 1;
        s.destroy();
        resolve();
      };
      s.on('data', (d) => done(d.toString('latin1').split('\r\n')[0]!));
      s.on('error', () => undefined);
      s.once('close', () => done(''));
      s.once('connect', () => s.write(Buffer.concat([Buffer.from(head(i), 'latin1'), body])));
    });
  await Promise.all(Array.from({ length: conns }, async () => {
    while (Date.now() < end) await one(sent++);
  }));
  return { sent, statuses };
}
