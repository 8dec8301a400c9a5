// DNS over TCP (RFC 7766): each message behind a two-byte length, several per connection,
// answered in order one at a time (a connection holds at most one look-up). What one client can
// hold is bounded: the bytes read ahead (reading pauses above READ_AHEAD), the connections per
// address and in all (over either cap: closed at once), and the time without traffic (then
// closed). A message under 12 bytes cannot be answered and closes its connection.
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import type { DnsMetrics } from './types.js';

/** what one connection reads ahead of the query it is answering: two whole messages */
const READ_AHEAD = 2 * (2 + 65535);

export interface TcpOptions {
  /** the answer to one message, or null for none (the connection is then closed) */
  answer: (msg: Buffer) => Promise<Buffer | null>;
  perAddress: number;
  total: number;
  idleMs: number;
  metrics: DnsMetrics | null;
}

export class DnsTcp {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly perAddress = new Map<string, number>();

  constructor(private readonly o: TcpOptions) {
    this.server = createServer((s) => this.accept(s));
  }

  async listen(host: string, port: number): Promise<number> {
    this.server.listen({ host, port, exclusive: true });
    await Promise.race([once(this.server, 'listening'), once(this.server, 'error').then(([e]) => Promise.reject(e as Error))]);
    return (this.server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    const closed = once(this.server, 'close');
    this.server.close();
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  private accept(s: Socket): void {
    const addr = s.remoteAddress ?? '';
    const n = this.perAddress.get(addr) ?? 0;
    if (n >= this.o.perAddress || this.sockets.size >= this.o.total) {
      this.o.metrics?.dropped('tcp-limit');
      s.destroy();
      return;
    }
    this.perAddress.set(addr, n + 1);
    this.sockets.add(s);
    s.on('close', () => {
      this.sockets.delete(s);
      const left = (this.perAddress.get(addr) ?? 1) - 1;
      if (left > 0) this.perAddress.set(addr, left);
      else this.perAddress.delete(addr);
    });
    new Connection(s, this.o).start();
  }
}

/** One connection's framing: chunks are joined only once a whole message is there. */
class Connection {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private busy = false;

  constructor(
    private readonly s: Socket,
    private readonly o: TcpOptions,
  ) {}

  start(): void {
    const s = this.s;
    s.setNoDelay(true);
    s.setTimeout(this.o.idleMs, () => s.destroy());
    s.on('error', () => s.destroy());
    s.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
      if (this.buffered > READ_AHEAD) s.pause();
      void this.pump();
    });
  }

  /** The next whole message, or null while it is still coming. */
  private next(): Buffer | null {
    if (this.buffered < 2) return null;
    if (this.chunks[0]!.length < 2) this.chunks = [Buffer.concat(this.chunks)];
    const len = this.chunks[0]!.readUInt16BE(0);
    // a message trickling in is joined once, when it is whole
    if (this.buffered < 2 + len) return null;
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const rest = all.subarray(2 + len);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return all.subarray(2, 2 + len);
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    const s = this.s;
    try {
      for (;;) {
        if (s.destroyed) return;
        const msg = this.next();
        if (!msg) break;
        const reply = msg.length < 12 ? null : await this.o.answer(msg);
        if (s.destroyed) return;
        if (!reply) {
          this.o.metrics?.dropped('malformed');
          s.destroy();
          return;
        }
        const head = Buffer.alloc(2);
        head.writeUInt16BE(reply.length);
        if (!s.write(Buffer.concat([head, reply]))) {
          await Promise.race([once(s, 'drain'), once(s, 'close')]);
        }
      }
      if (s.isPaused() && this.buffered <= READ_AHEAD) s.resume();
    } catch {
      // `answer` answers every message itself (SERVFAIL at worst): this is a bug, not input
      s.destroy();
    } finally {
      this.busy = false;
    }
  }
}
