// The model of heartbeat-2.lua's rules (redis/README.md, the script's header) that the
// heartbeat script and batch tests hold real Redis to: what the script answers a line (and the
// deadline it sets), the lease records and lines fast-check draws (well-formed, and of other
// shapes no script of ours writes), and one shard's case seeded in Redis with the model's
// answers and deadlines.
import fc from 'fast-check';
import type { Keys } from '../../src/hot/domain/keys.js';
import type { RedisClient } from '../../src/hot/redis/client.js';

export const IDS = ['a', 'b-1', 'c_2', 'D3'];
const NSS = ['production', '0f6c1a52-1b7e-4a61-9a0f-3f2b1c0d9e8a'];
export const TOKS = ['ab12', 'AB12', 'ab', 'ab123', 'ff'.repeat(32)];
const LINE = /^([A-Za-z0-9_-]+) ([0-9a-fA-F]+) ([pc]) ([01]) ([A-Za-z0-9_-]+)$/;
const RECORD = /^\d+\|([^|]*)\|([0-9a-fA-F]*)\|(\d+)\|([pc])\|\d+\|\d*$/;

/** What the script answers a line (and the deadline it sets, if any). */
export function model(line: string, records: Map<string, string>, now: number): { r: number; renew?: [string, number] } {
  const m = LINE.exec(line);
  if (!m) return { r: -2 };
  const [, id, tok, want, chk, ns] = m as unknown as [string, string, string, string, string, string];
  const rec = records.get(id);
  if (rec === undefined) return { r: -1 };
  const f = RECORD.exec(rec);
  if (!f || f[2] === '' || f[2] !== tok || f[1] !== ns) return { r: -2 };
  const r = f[4] !== want ? 1 : 0;
  return chk !== '1' && want === 'p' ? { r, renew: [id, now + Number(f[3]) * 1000] } : { r };
}

const digits = fc.integer({ min: 0, max: 99_999 }).map(String);
const wellFormed = fc
  .tuple(digits, fc.constantFrom(...NSS, ''), fc.constantFrom(...TOKS, ''), fc.constantFrom('5', '60', '86400'), fc.constantFrom('p', 'c'), fc.constantFrom('0', '600'), fc.constantFrom('', '1764000000000'))
  .map((xs) => xs.join('|'));
/** records no script writes: each field's shape broken in turn, or any text */
const otherShape = fc.oneof(
  wellFormed.map((r) => 'x' + r), // revision not digits
  wellFormed.map((r) => r.replace(/^\d+/, '')), // no revision
  wellFormed.map((r) => r + '|'), // a field too many
  wellFormed.map((r) => r.replace(/\|[pc]\|/, '|x|')), // status
  wellFormed.map((r) => r.replace(/\|(\d+)\|([pc])/, '|t$1|$2')), // ttl
  wellFormed.map((r) => r.split('|').slice(0, 6).join('|')), // a field short
  wellFormed.map((r) => r.replace('|', '||')), // the namespace shifted
  fc.string({ maxLength: 90 }),
);
export const record = fc.oneof({ weight: 4, arbitrary: wellFormed }, { weight: 1, arbitrary: otherShape });
const goodLine = fc.tuple(fc.constantFrom(...IDS, 'zz'), fc.constantFrom(...TOKS), fc.constantFrom('p', 'c'), fc.constantFrom('0', '1'), fc.constantFrom(...NSS, 'sandbox')).map((xs) => xs.join(' '));
const badLine = fc.oneof(
  goodLine.map((l) => l + ' '),
  goodLine.map((l) => ' ' + l),
  goodLine.map((l) => l.replace(' ', '  ')),
  goodLine.map((l) => l.replace(/ [pc] /, ' x ')),
  goodLine.map((l) => l.replace(/ [01] /, ' 2 ')),
  goodLine.map((l) => l.replace(/ [0-9a-fA-F]+ /, ' g1 ')),
  goodLine.map((l) => l.split(' ').slice(0, 4).join(' ')),
  fc.string({ maxLength: 40 }).map((s) => s.replace(/\n/g, '')),
);
export const line = fc.oneof({ weight: 3, arbitrary: goodLine }, { weight: 1, arbitrary: badLine });

/**
 * One shard's case: its records written to shard `shard` of `k` (each with deadline 1), its
 * lines as the script takes them, and what the model says: the answers, and every record's
 * deadline after the call.
 */
export async function seedShard(redis: RedisClient, k: Keys, shard: number, recs: [string, string][], lines: string[], now: number): Promise<{ text: string; want: number[]; deadlines: Map<string, number> }> {
  const records = new Map(recs);
  for (const [id, rec] of records) {
    await redis.hset(k.leases(shard), id, rec);
    await redis.zadd(k.deadlines(shard), 1, id);
  }
  const deadlines = new Map([...records.keys()].map((id) => [id, 1]));
  const want: number[] = [];
  for (const l of lines) {
    const m = model(l, records, now);
    want.push(m.r);
    if (m.renew) deadlines.set(...m.renew);
  }
  return { text: lines.map((l) => l + '\n').join(''), want, deadlines };
}
