// A large script call written straight into one buffer: the rebuild's pages (index-page-1.lua,
// ~8,000 arguments, ~600 kB). ioredis builds a call as one string of all its arguments and
// their headers, which the socket then flattens and encodes again (a tenth of the rebuilding
// process's time: docs/decisions/rebuild.md); here each argument is encoded once, into its
// place. The call is still ioredis's (a Command): its queue, reply parsing, timeout, and a
// cluster's routing by the key. A server without the script (NOSCRIPT: restarted) gets the
// call through ioredis's own script command, which sends it as EVAL and loads it.
import { Command } from 'ioredis';
import type { RedisClient, ScriptSource } from './client.js';

/** A command whose bytes are given: ioredis writes them as they are. */
class Prebuilt extends Command {
  constructor(
    private readonly bytes: Buffer,
    routing: string[],
  ) {
    super('evalsha', routing, { replyEncoding: 'utf8' });
  }
  override toWritable(): Buffer {
    return this.bytes;
  }
}

/** decimal digits of a non-negative integer */
function digits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** EVALSHA sha numKeys ...args as RESP, in one buffer. */
export function evalshaBytes(sha: string, numKeys: number, args: readonly string[]): Buffer {
  const n = args.length;
  const lens = new Array<number>(n);
  let size = 0;
  for (let i = 0; i < n; i++) {
    const b = Buffer.byteLength(args[i]!);
    lens[i] = b;
    size += b + digits(b) + 5; // $<len>\r\n<bytes>\r\n
  }
  const nk = String(numKeys);
  const head = `*${n + 3}\r\n$7\r\nevalsha\r\n$${sha.length}\r\n${sha}\r\n$${nk.length}\r\n${nk}\r\n`;
  const buf = Buffer.allocUnsafe(head.length + size);
  let at = buf.write(head, 0, 'latin1');
  for (let i = 0; i < n; i++) {
    const len = lens[i]!;
    buf[at] = 36; // $
    const d = digits(len);
    for (let j = d, v = len; j > 0; j--, v = Math.floor(v / 10)) buf[at + j] = 48 + (v % 10);
    at += d + 1;
    buf[at++] = 13;
    buf[at++] = 10;
    at += buf.write(args[i]!, at);
    buf[at++] = 13;
    buf[at++] = 10;
  }
  return buf;
}

/**
 * Call the script `src` with its `numKeys` keys first among `args`, the call written into one
 * buffer; `viaIoredis` sends the same call the ordinary way (NOSCRIPT: Redis lost its scripts).
 */
export async function evalshaPrebuilt(redis: RedisClient, src: ScriptSource, numKeys: number, args: readonly string[], viaIoredis: () => Promise<unknown>): Promise<unknown> {
  const cmd = new Prebuilt(evalshaBytes(src.sha, numKeys, args), [src.sha, String(numKeys), ...args.slice(0, numKeys)]);
  try {
    return await redis.sendCommand(cmd);
  } catch (e) {
    if (e instanceof Error && e.message.startsWith('NOSCRIPT')) return viaIoredis();
    throw e;
  }
}
