// Raw HTTP/1.1 on a loopback socket the test controls byte by byte (slow, partial and
// keep-alive requests), and everything it receives until it closes or goes quiet.
import { connect, type Socket } from 'node:net';

/** A raw HTTP/1.1 exchange on a socket we control (slow, partial and keep-alive requests). */
export function rawSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** Everything a socket receives until it closes or `idleMs` pass without data. */
export function collect(s: Socket, idleMs = 1000): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    let data = '';
    let t: NodeJS.Timeout = setTimeout(() => finish(false), idleMs);
    const finish = (closed: boolean) => {
      clearTimeout(t);
      s.removeAllListeners('data');
      resolve({ data, closed });
    };
    s.on('data', (d) => {
      data += d.toString('latin1');
      clearTimeout(t);
      t = setTimeout(() => finish(false), idleMs);
    });
    s.once('close', () => finish(true));
  });
}

/** `text` sent as it is on a connection of its own to `port`; everything the peer sent until it ended. */
export function exchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let out = '';
    sock.on('data', (d) => (out += d.toString('latin1')));
    sock.on('end', () => resolve(out));
    sock.on('close', () => resolve(out));
    sock.on('error', reject);
    sock.write(text);
  });
}
