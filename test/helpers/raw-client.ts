// A keep-alive HTTP/1.1 client on one socket that sends request bytes exactly as given (so
// nothing normalises a hostile URL, header or body on the way), for the property tests.
import { connect, type Socket } from 'node:net';
import type { Test } from 'tap';
import { assertDocumented } from './openapi-check.js';

export interface Raw {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A keep-alive HTTP/1.1 client on one socket that sends the request bytes exactly as given. */
export class RawClient {
  private sock: Socket | null = null;
  private buf = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  constructor(readonly port: number) {}

  private async open(): Promise<Socket> {
    if (this.sock && !this.sock.destroyed) return this.sock;
    this.buf = Buffer.alloc(0);
    const s = connect(this.port, '127.0.0.1');
    s.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.waiting?.();
    });
    s.on('close', () => this.waiting?.());
    s.on('error', () => undefined);
    await new Promise((r) => s.once('connect', r));
    this.sock = s;
    return s;
  }

  /** `head`: the answer has no body whatever its Content-Length (a HEAD request) */
  async request(head: Buffer, body: Buffer = Buffer.alloc(0), noBody = false): Promise<Raw> {
    const s = await this.open();
    s.write(Buffer.concat([head, body]));
    const deadline = Date.now() + 15_000;
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
        const status = Number(lines[0]!.split(' ')[1]);
        const headers: Record<string, string> = {};
        for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
        // a stream (the change feed) has no length: take its head, then drop the connection
        const stream = (headers['content-type'] ?? '').startsWith('text/event-stream') && !noBody;
        const len = noBody || stream ? 0 : Number(headers['content-length'] ?? 0);
        if (this.buf.length >= end + 4 + len) {
          const out = { status, headers, body: this.buf.subarray(end + 4, end + 4 + len).toString('utf8') };
          this.buf = this.buf.subarray(end + 4 + len);
          if (headers.connection === 'close' || stream) this.close();
          // checked against the served /openapi.json when the request line parses
          const line = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r\n/.exec(head.toString('latin1'));
          if (line) assertDocumented(this.port, { method: line[1]!, target: line[2]!, status, header: (n) => headers[n.toLowerCase()] ?? null, body: noBody ? '' : out.body });
          return out;
        }
      }
      if (s.destroyed) {
        this.sock = null;
        return { status: 0, headers: {}, body: '' }; // closed without an answer
      }
      if (Date.now() > deadline) throw new Error('no answer within 15 s');
      await new Promise<void>((r) => {
        this.waiting = r;
        setTimeout(r, 200);
      });
      this.waiting = null;
    }
  }

  close(): void {
    this.sock?.destroy();
    this.sock = null;
  }
}

/** A RawClient on `port` for the test `t`, closed when `t` ends. */
export function rawClient(t: Test, port: number): RawClient {
  const c = new RawClient(port);
  t.teardown(() => c.close());
  return c;
}
