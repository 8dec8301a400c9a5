// MONITOR over a plain socket: every command Redis runs, one line each, in the order it ran
// them. Not ioredis's monitor(): it sets its "monitoring" state in a promise callback, so a
// feed line that arrives in the same read as MONITOR's OK finds an empty command queue and
// fails the connection ("Command queue state error") on a busy Redis.
import { connect, type Socket } from 'node:net';

const resp = (args: string[]) => `*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('');

export type Monitor = { lines: string[]; close: () => void };

/** Connect to `url` (redis://[user:pass@]host:port), send MONITOR, resolve once it answered OK. */
export function monitorRedis(url: string): Promise<Monitor> {
  const u = new URL(url);
  const sock: Socket = connect(Number(u.port || 6379), u.hostname);
  const lines: string[] = [];
  let buf = '';
  let expectOk = 1;
  return new Promise((resolve, reject) => {
    sock.once('error', reject);
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      for (let i = buf.indexOf('\r\n'); i >= 0; i = buf.indexOf('\r\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (expectOk > 0) {
          if (line !== '+OK') return reject(new Error(`MONITOR refused: ${line}`));
          if (--expectOk === 0) resolve({ lines, close: () => sock.destroy() });
          continue;
        }
        lines.push(line);
      }
    });
    if (u.password) {
      expectOk++;
      sock.write(resp(u.username ? ['AUTH', decodeURIComponent(u.username), decodeURIComponent(u.password)] : ['AUTH', decodeURIComponent(u.password)]));
    }
    sock.write(resp(['MONITOR']));
  });
}
