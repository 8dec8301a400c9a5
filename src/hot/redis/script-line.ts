// A lean Redis connection of its own for one hot call, the turn's heartbeat script call
// (liveness/heartbeat-batch.ts; docs/decisions/heartbeat-connection.md): one RESP string
// written to the socket and one callback, answered in order, without ioredis's per-command
// objects, timer and promise. An optimisation, never a second way to be right: a call goes
// on the line only while it is ready (connected, authenticated, database selected), else
// `evalsha` returns false and the caller uses ioredis; clusters, Sentinel and the offline
// queue stay ioredis's. A lost connection, or a call unanswered for `timeoutMs` (one watchdog
// timer a line), fails the calls in flight as "Redis unavailable" (domain/outage.ts) and
// reconnects with backoff up to 1 s; NOSCRIPT is answered by resending the call as EVAL.
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { bulkStrings, encodeCommand, LineReplyError, RespReader } from './resp-reader.js';

export { encodeCommand, LineReplyError, RespReader } from './resp-reader.js';

/** Where the line connects, and as whom: a standalone ioredis client's own options. */
export interface LineTarget {
  host?: string;
  port?: number;
  /** a Unix socket (ioredis `path`) */
  path?: string;
  username?: string;
  password?: string;
  db?: number;
  tls?: ConnectionOptions;
}

/** A call's answer: an error (a reply error, or the connection lost), or the reply. */
export type LineDone = (err: Error | undefined, reply: unknown) => void;

interface Call {
  done: LineDone;
  /** when it was written (ms, Date.now()), for the watchdog */
  at: number;
  /** the script of an EVALSHA, sent as EVAL when Redis answers NOSCRIPT (null: none, or sent) */
  lua: string | null;
  /** the EVALSHA's numkeys, keys and arguments as RESP bulk strings (the same for EVAL) */
  tail: string;
  /** how many bulk strings `tail` holds */
  size: number;
}

export interface ScriptLineOptions {
  /** a call unanswered this long drops the connection (ms; ioredis's commandTimeout) */
  timeoutMs?: number;
  /** connecting gives up after this long (ms; ioredis's connectTimeout) */
  connectTimeoutMs?: number;
  /** the connection's name (CLIENT SETNAME): operators find it in CLIENT LIST */
  name?: string;
  /** a call's callback threw (a bug of the caller's; the line goes on) */
  onError?: (err: unknown) => void;
}

/** Bytes written and not yet taken by the kernel beyond which the line refuses calls (ioredis takes them). */
const MAX_BUFFERED = 1 << 20;

export class ScriptLine {
  private socket: Socket | null = null;
  private ready = false;
  private closing = false;
  /** calls written and not answered, oldest first (from `head`) */
  private calls: Call[] = [];
  private head = 0;
  private reader = new RespReader();
  private attempts = 0;
  private retry: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private readonly timeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly onError: (err: unknown) => void;
  private readonly name: string;
  /** the error the calls in flight fail with when the connection goes */
  private lost: Error | null = null;
  /** calls sent, replies, NOSCRIPT resends, connections made (tests, the bench) */
  readonly stats = { calls: 0, replies: 0, noscript: 0, connects: 0 };

  constructor(
    private readonly target: LineTarget,
    o: ScriptLineOptions = {},
  ) {
    this.timeoutMs = o.timeoutMs ?? 5000;
    this.connectTimeoutMs = o.connectTimeoutMs ?? 2000;
    this.name = o.name ?? 'registry-script-line';
    this.onError = o.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
  }

  /** Connect (again after a loss, by itself), and start the watchdog. */
  start(): void {
    if (this.closing) return;
    if (!this.watchdog) {
      this.watchdog = setInterval(() => this.check(), Math.max(50, Math.min(1000, this.timeoutMs / 4)));
      this.watchdog.unref();
    }
    if (!this.socket) this.open();
  }

  /** Whether calls go on the line now (connected, authenticated, database selected). */
  get isReady(): boolean {
    return this.ready;
  }

  /**
   * EVALSHA `sha` with `numKeys` keys among `args`, answered through `done` (once). False,
   * and `done` never called, when the line is not ready: the caller sends it another way.
   */
  evalsha(sha: string, lua: string, numKeys: number, args: readonly (string | number)[], done: LineDone): boolean {
    const s = this.socket;
    if (!this.ready || !s || s.destroyed || s.writableLength > MAX_BUFFERED) return false;
    const tail = bulkStrings([numKeys]) + bulkStrings(args);
    this.calls.push({ done, at: Date.now(), lua, tail, size: args.length + 1 });
    this.stats.calls++;
    s.write('*' + (args.length + 3) + '\r\n$7\r\nEVALSHA\r\n$40\r\n' + sha + '\r\n' + tail);
    return true;
  }

  /**
   * Stop: no more calls; those in flight are answered (QUIT is answered after them), then
   * the connection closes. No reconnection after this.
   */
  close(): void {
    this.closing = true;
    this.ready = false;
    if (this.watchdog) clearInterval(this.watchdog);
    if (this.retry) clearTimeout(this.retry);
    const s = this.socket;
    if (!s) return;
    if (this.head === this.calls.length) {
      s.destroy();
      return;
    }
    this.calls.push({ done: () => s.end(), at: Date.now(), lua: null, tail: '', size: 0 });
    s.write(encodeCommand(['QUIT']));
    // a Redis that does not answer is not waited for long
    setTimeout(() => s.destroy(), this.timeoutMs).unref();
  }

  private open(): void {
    const t = this.target;
    const s: Socket = t.tls
      ? tlsConnect({ ...t.tls, host: t.host, port: t.port ?? 6379 })
      : t.path
        ? netConnect({ path: t.path })
        : netConnect({ host: t.host ?? '127.0.0.1', port: t.port ?? 6379 });
    this.socket = s;
    this.reader = new RespReader();
    this.lost = null;
    s.setNoDelay(true);
    s.setTimeout(this.connectTimeoutMs, () => s.destroy(Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' })));
    s.once(t.tls ? 'secureConnect' : 'connect', () => {
      s.setTimeout(0);
      this.stats.connects++;
      this.handshake(s);
    });
    s.on('data', (chunk: Buffer) => this.data(s, chunk));
    s.on('error', (e: Error) => (this.lost ??= e));
    s.on('close', () => this.gone(s));
  }

  /**
   * AUTH and SELECT as the client's options ask, then the name; ready once each answered.
   * A refused AUTH or SELECT drops the connection (tried again later, ioredis meanwhile); a
   * refused name does not (an ACL user may lack CLIENT): it is only for operators.
   */
  private handshake(s: Socket): void {
    const steps: { cmd: (string | number)[]; must: boolean }[] = [];
    const t = this.target;
    if (t.password) steps.push({ cmd: t.username ? ['AUTH', t.username, t.password] : ['AUTH', t.password], must: true });
    if (t.db) steps.push({ cmd: ['SELECT', t.db], must: true });
    steps.push({ cmd: ['CLIENT', 'SETNAME', this.name], must: false });
    let left = steps.length;
    for (const step of steps) {
      this.calls.push({
        done: (err) => {
          if (err && step.must) return s.destroy(err);
          if (--left === 0) this.up();
        },
        at: Date.now(),
        lua: null,
        tail: '',
        size: 0,
      });
      s.write(encodeCommand(step.cmd));
    }
  }

  private up(): void {
    if (this.closing) return;
    this.ready = true;
    this.attempts = 0;
  }

  private data(s: Socket, chunk: Buffer): void {
    try {
      this.reader.feed(chunk, (v) => this.answer(s, v));
    } catch (e) {
      // bytes that are not RESP: nothing later on this connection can be trusted
      s.destroy(e as Error);
    }
  }

  private answer(s: Socket, v: unknown): void {
    if (this.head >= this.calls.length) throw new Error('Redis line: a reply without a call');
    const c = this.calls[this.head]!;
    this.calls[this.head++] = undefined as unknown as Call;
    if (this.head === this.calls.length) {
      // none left in flight (the usual case between turns): start the queue again
      this.calls.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.calls.length) {
      this.calls = this.calls.slice(this.head);
      this.head = 0;
    }
    this.stats.replies++;
    if (v instanceof LineReplyError) {
      if (c.lua !== null && v.message.startsWith('NOSCRIPT')) {
        // the script is not loaded (a restart, SCRIPT FLUSH): EVAL with its text loads it
        // (the command built only now); the answer comes after those of the calls already
        // written, as the FIFO expects
        this.stats.noscript++;
        this.calls.push({ done: c.done, at: Date.now(), lua: null, tail: c.tail, size: c.size });
        s.write('*' + (c.size + 2) + '\r\n$4\r\nEVAL\r\n' + bulkStrings([c.lua]) + c.tail);
        return;
      }
      return this.settle(c, v, undefined);
    }
    this.settle(c, undefined, v);
  }

  /** A call's callback, which must not throw: if it does, the line goes on (onError hears of it). */
  private settle(c: Call, err: Error | undefined, v: unknown): void {
    try {
      c.done(err, v);
    } catch (e) {
      this.onError(e);
    }
  }

  /** The connection went: its calls fail, and it comes back unless the line is closing. */
  private gone(s: Socket): void {
    if (this.socket !== s) return;
    this.socket = null;
    this.ready = false;
    const err = this.lost ?? new Error('Connection is closed.');
    const failed = this.calls.slice(this.head);
    this.calls = [];
    this.head = 0;
    const closed = Object.assign(new Error(err.message.startsWith('Command timed out') ? err.message : 'Connection is closed.'), { cause: err });
    for (const c of failed) this.settle(c, closed, undefined);
    if (this.closing) return;
    const wait = Math.min(++this.attempts * 100, 1000);
    this.retry = setTimeout(() => {
      this.retry = null;
      this.start();
    }, wait);
    this.retry.unref();
  }

  /** The watchdog: a call unanswered for timeoutMs drops the connection (its calls fail). */
  private check(): void {
    const s = this.socket;
    if (!s || this.head >= this.calls.length) return;
    if (Date.now() - this.calls[this.head]!.at > this.timeoutMs) {
      this.lost = new Error('Command timed out');
      s.destroy();
    }
  }
}
