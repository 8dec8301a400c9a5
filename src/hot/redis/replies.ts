// Lua script replies turned into typed values, in one place. ioredis types every script
// reply as `unknown`; the scripts of redis/ answer "cannot" with a negative integer —
// NOT_INDEXED (-1: the namespace has no marker in that generation, Redis was emptied) or,
// inside search.lua's array, HEAVY (-2: the planner hands the page to the worker pool) —
// and otherwise with an integer or an array. Callers read the types below instead of
// casting, and a reply of another shape (a script and its caller out of step) fails here
// with a message naming the script, not as a wrong value further on.

/** the namespace is not indexed in that generation (script replies, and search's reply[0]) */
export const NOT_INDEXED = -1;
/** search.lua: every set is larger than the planner threshold; the pool computes the page */
export const HEAVY = -2;

export class UnexpectedReply extends Error {
  constructor(script: string, what: string) {
    super(`unexpected reply from ${script}.lua: ${what}`);
    this.name = 'UnexpectedReply';
  }
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

/** An integer reply (count, apply-service, apply-sandbox, del-if-equal, pexpire-if-equal). */
export function integer(r: unknown, script: string): number {
  if (!isInt(r)) throw new UnexpectedReply(script, `expected an integer, got ${typeof r}`);
  return r;
}

/**
 * apply-services: NOT_INDEXED (the namespace has no marker in that generation: nothing was
 * written), or per state sent, the namespace version after it (>= 2) or 0 (stale).
 */
export function applyServicesReply(r: unknown, states: number): number[] | typeof NOT_INDEXED {
  if (r === NOT_INDEXED) return NOT_INDEXED;
  if (!Array.isArray(r) || r.length !== states || !r.every(isInt)) throw new UnexpectedReply('apply-services', `expected ${states} integers or ${NOT_INDEXED}, got ${String(r)}`);
  return r as number[];
}

/** del-if-equal / pexpire-if-equal: whether the key held the value (and was deleted or extended). */
export function ifEqualReply(r: unknown, script: 'del-if-equal' | 'pexpire-if-equal'): boolean {
  const n = integer(r, script);
  if (n !== 0 && n !== 1) throw new UnexpectedReply(script, `expected 0 or 1, got ${n}`);
  return n === 1;
}

/** An array reply, or NOT_INDEXED. */
function arrayOrNotIndexed<T>(r: unknown, script: string): T[] | typeof NOT_INDEXED {
  if (r === NOT_INDEXED) return NOT_INDEXED;
  if (!Array.isArray(r)) throw new UnexpectedReply(script, `expected an array or ${NOT_INDEXED}, got ${String(r)}`);
  return r as T[];
}

/** search.lua: NOT_INDEXED, or its array (`[HEAVY, version]`, or a page: see search.lua). */
export function searchReply<T extends string | Buffer>(r: unknown): (T | number)[] | typeof NOT_INDEXED {
  return arrayOrNotIndexed<T | number>(r, 'search');
}

/** search.lua's answer, named: a page, or the planner's hand-over to the worker pool. */
export type SearchPage<T extends string | Buffer> =
  | {
      heavy: false;
      /** more results follow: the script found one past the page */
      more: boolean;
      /** seq to continue after ("" when none) */
      last: string;
      seqs: string[];
      /** the documents, in page order, as stored */
      docs: T[];
    }
  | { heavy: true; /** the namespace version the pool must read the sets at */ version: string };

/**
 * search.lua: NOT_INDEXED, `{ HEAVY, version }`, or `{ more, last, seq1, doc1, seq2, doc2, ... }`,
 * as a SearchPage.
 */
export function searchPage<T extends string | Buffer>(r: unknown): SearchPage<T> | typeof NOT_INDEXED {
  const a = searchReply<T>(r);
  if (a === NOT_INDEXED) return NOT_INDEXED;
  if (a[0] === HEAVY) return { heavy: true, version: String(a[1]) };
  if (a.length < 2 || a.length % 2 === 1) throw new UnexpectedReply('search', `expected more, last and (seq, doc) pairs, got ${a.length} fields`);
  const seqs: string[] = [];
  const docs: T[] = [];
  for (let i = 2; i < a.length; i += 2) {
    seqs.push(String(a[i]));
    docs.push(a[i + 1] as T);
  }
  return { heavy: false, more: a[0] === 1, last: String(a[1]), seqs, docs };
}

/** get-service's row (redis/get-service-1.lua): the service's seq, document and deprecation header data. */
export interface ServiceRow {
  seq: string;
  doc: string;
  /** the service's deprecation header data ("" when not deprecated) */
  hdr: string;
}

/** An array of exactly `n` strings, or 0 (no such service), or NOT_INDEXED. */
function row(r: unknown, script: string, n: number): string[] | 0 | typeof NOT_INDEXED {
  if (r === 0) return 0;
  const a = arrayOrNotIndexed<unknown>(r, script);
  if (a === NOT_INDEXED) return NOT_INDEXED;
  if (a.length !== n || !a.every((v) => typeof v === 'string')) throw new UnexpectedReply(script, `expected ${n} strings, got ${a.length} fields`);
  return a as string[];
}

/** get-service: NOT_INDEXED, null (no such service) or the service's row. */
export function serviceReply(r: unknown): ServiceRow | null | typeof NOT_INDEXED {
  const a = row(r, 'get-service', 3);
  if (a === NOT_INDEXED) return NOT_INDEXED;
  if (a === 0) return null;
  return { seq: a[0]!, doc: a[1]!, hdr: a[2]! };
}

/** replacements' answer (redis/replacements-1.lua): an entry of the shared replacements cache. */
export interface ReplacementsReply {
  /** whether this call hit the shared cache (MISS: it computed and stored the entry) */
  status: 'HIT' | 'MISS';
  body: string;
  etag: string;
  /** when the shared cache stored it (ms): the Age field */
  storedAt: number;
  /** the service's deprecation header data ("" when not deprecated) */
  hdr: string;
}

/** replacements: NOT_INDEXED, null (no such service) or the cache entry. */
export function replacementsReply(r: unknown): ReplacementsReply | null | typeof NOT_INDEXED {
  const a = row(r, 'replacements', 5);
  if (a === NOT_INDEXED) return NOT_INDEXED;
  if (a === 0) return null;
  const [status, body, etag, storedAt, hdr] = a as [string, string, string, string, string];
  if (status !== 'HIT' && status !== 'MISS') throw new UnexpectedReply('replacements', `expected HIT or MISS, got ${status}`);
  const t = Number(storedAt);
  if (!Number.isFinite(t)) throw new UnexpectedReply('replacements', 'bad stored-at time');
  return { status, body, etag, storedAt: t, hdr };
}

/**
 * near-load (called as nearLoadBuffer): null when not indexed, else the namespace version, the
 * first bucket of the next slice (-1: none) and this slice's (bucket, offsets) pairs, for
 * decodeBuckets() (src/workers/buckets.ts).
 */
export function nearLoadReply(r: unknown): { ver: number; next: number; buckets: [string, Buffer][] } | null {
  const a = arrayOrNotIndexed<Buffer | number>(r, 'near-load');
  if (a === NOT_INDEXED) return null;
  if (a.length < 2 || a.length % 2 !== 0 || !a.every(Buffer.isBuffer)) throw new UnexpectedReply('near-load', 'expected a version, the next slice and (bucket, offsets) pairs');
  const next = Number(String(a[1]));
  if (!Number.isInteger(next) || next < -1) throw new UnexpectedReply('near-load', 'bad next slice');
  const buckets: [string, Buffer][] = [];
  for (let i = 2; i < a.length; i += 2) buckets.push([String(a[i]), a[i + 1] as Buffer]);
  return { ver: Number(String(a[0])), next, buckets };
}

/**
 * index-page: NOT_INDEXED; or, when some ids of the page were not new to the generation (and
 * nothing was written), those to leave out of the page (`skip`: a newer or equal state is in
 * place; `left`: an older state is, for the caller to apply with apply-service); or null
 * when the page was written.
 */
export function indexPageReply(r: unknown): { skip: string[]; left: string[] } | null | typeof NOT_INDEXED {
  const a = arrayOrNotIndexed<string | number>(r, 'index-page');
  if (a === NOT_INDEXED) return NOT_INDEXED;
  if (a[0] !== -2) return null;
  const s = Number(a[1]);
  if (!Number.isInteger(s) || s < 0 || s + 2 > a.length) throw new UnexpectedReply('index-page', 'bad skip count');
  return { skip: a.slice(2, 2 + s).map(String), left: a.slice(2 + s).map(String) };
}

/** rate-limit's answer (redis/rate-limit-4.lua), by name; durations by Redis's clock */
export interface RateLimitReply {
  admitted: boolean;
  /** the sandbox's limit (requests a minute), read by the script from the sandbox hash */
  limit: number;
  /** admissions in the window, this request's included */
  used: number;
  /** s until a refused request may be admitted (0 when admitted) */
  retryAfter: number;
  /** s until the oldest counted bucket leaves the window */
  reset: number;
  /** admissions taken at once, this request's included (the thread answers granted - 1 more: leases.ts) */
  granted: number;
  /** the bucket counted in (an id for refunds, not a time) */
  bucket: number;
  /** ms left in that bucket */
  leftMs: number;
  /** ms until the window can admit again (0 when admitted) */
  retryAfterMs: number;
}

/**
 * rate-limit: NOT_INDEXED (`{ -1 }`: the sandbox is unknown to Redis), or its nine fields
 * `{ admitted (1/0), limit, used, retryAfter, reset, granted, bucket, leftMs, retryAfterMs }`.
 */
export function rateLimitReply(r: unknown): RateLimitReply | typeof NOT_INDEXED {
  if (!Array.isArray(r) || !r.every(isInt)) throw new UnexpectedReply('rate-limit', 'expected an array of integers');
  const a = r as number[];
  if (a.length === 1 && a[0] === NOT_INDEXED) return NOT_INDEXED;
  if (a.length !== 9 || (a[0] !== 0 && a[0] !== 1)) throw new UnexpectedReply('rate-limit', `expected ${NOT_INDEXED} or nine fields, got ${a.length}`);
  const [admitted, limit, used, retryAfter, reset, granted, bucket, leftMs, retryAfterMs] = a as [number, number, number, number, number, number, number, number, number];
  return { admitted: admitted === 1, limit, used, retryAfter, reset, granted, bucket, leftMs, retryAfterMs };
}

/** poll-data: null for an unknown sandbox, else its counters and the last buckets. */
export function pollReply(r: unknown): { limit: number; total: number; rejected: number; tier: string; buckets: number[] } | null {
  const a = arrayOrNotIndexed<string | number>(r, 'poll-data');
  if (a === NOT_INDEXED || a[0] === NOT_INDEXED) return null;
  if (a.length < 4) throw new UnexpectedReply('poll-data', `expected at least 4 fields, got ${a.length}`);
  return { limit: Number(a[0]), total: Number(a[1]), rejected: Number(a[2]), tier: String(a[3]), buckets: a.slice(4).map(Number) };
}

/** A lease as Redis holds it (redis/lib/lease.lua; written by lease-apply-2.lua). */
export interface LeaseRecord {
  rev: number;
  ns: string;
  tokenHash: string;
  ttl: number;
  status: 'passing' | 'critical';
  /** seconds, 0: never deleted */
  deregisterAfter: number;
  /** ms, null unless critical */
  criticalSince: number | null;
}

const LEASE_RE = /^(\d+)\|([^|]*)\|([0-9a-fA-F]*)\|(\d+)\|([pc])\|(\d+)\|(\d*)$/;

export function leaseRecord(text: string, script: string): LeaseRecord {
  const m = LEASE_RE.exec(text);
  if (!m) throw new UnexpectedReply(script, 'a lease record of another format');
  return { rev: Number(m[1]), ns: m[2]!, tokenHash: m[3]!, ttl: Number(m[4]), status: m[5] === 'p' ? 'passing' : 'critical', deregisterAfter: Number(m[6]), criticalSince: m[7] ? Number(m[7]) : null };
}

/** A due lease listed by lease-sweep-3.lua: `flipped` when that call turned it critical (`lease` is the record after it). */
export interface DueLease {
  id: string;
  due: number;
  lease: LeaseRecord;
  flipped: boolean;
}

/** lease-sweep-3.lua: null when another node holds the shard, else its due leases. */
export function leaseSweepReply(r: unknown): DueLease[] | null {
  if (r === -1) return null;
  if (!Array.isArray(r) || r.length % 4 !== 0) throw new UnexpectedReply('lease-sweep', 'expected -1 or id, due, record, flipped quadruples');
  const out: DueLease[] = [];
  for (let i = 0; i < r.length; i += 4) out.push({ id: String(r[i]), due: Number(r[i + 1]), lease: leaseRecord(String(r[i + 2]), 'lease-sweep'), flipped: r[i + 3] === '1' });
  return out;
}

/** An array of strings (lease-settle-2.lua: the ids it could not settle). */
export function stringArray(r: unknown, script: string): string[] {
  if (!Array.isArray(r) || !r.every((x) => typeof x === 'string')) throw new UnexpectedReply(script, 'expected an array of strings');
  return r as string[];
}

/** health-flip-1.lua: null when the namespace is not indexed, else how many documents changed and the ids left to apply-service. */
export function healthFlipReply(r: unknown): { changed: number; left: string[] } | null {
  const a = arrayOrNotIndexed<unknown>(r, 'health-flip');
  if (a === NOT_INDEXED) return null;
  if (!isInt(a[0]) || !a.slice(1).every((x) => typeof x === 'string')) throw new UnexpectedReply('health-flip', 'expected a count, then ids');
  return { changed: a[0], left: a.slice(1) as string[] };
}

/** heartbeat-2.lua: one result per heartbeat sent (0 renewed, 1 change, -1 no lease, -2 not its token). */
export function heartbeatReplies(r: unknown, n: number): number[] {
  if (!Array.isArray(r) || r.length !== n) throw new UnexpectedReply('heartbeat', `expected an array of ${n}, got ${Array.isArray(r) ? r.length : typeof r}`);
  for (const v of r) if (!isInt(v) || v < -2 || v > 1) throw new UnexpectedReply('heartbeat', `expected -2..1, got ${String(v)}`);
  return r as number[];
}

/** catalog.lua's answer: a capability's (or a namespace's) members with their revisions, and who left which capability. */
export interface CatalogRead {
  /** the members' documents, in seq order, as stored */
  docs: string[];
  /** each member's revision (its `ids` entry's), as decimal text */
  revs: string[];
  /** who left which capability, at which revision (decimal text) */
  tombs: { capability: string; id: string; rev: string }[];
}

/** catalog.lua: NOT_INDEXED, `{ TOO_MANY, members }`, or `{ docs, revs, tombs }`. */
export function catalogReply(r: unknown): CatalogRead | { tooMany: number } | typeof NOT_INDEXED {
  const a = arrayOrNotIndexed<unknown>(r, 'catalog');
  if (a === NOT_INDEXED) return NOT_INDEXED;
  if (a.length === 2 && a[0] === -3 && isInt(a[1])) return { tooMany: a[1] };
  const [docs, revs, tombs] = a as [unknown, unknown, unknown];
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');
  if (a.length !== 3 || !strings(docs) || !strings(revs) || !strings(tombs) || docs.length !== revs.length || tombs.length % 3) {
    throw new UnexpectedReply('catalog', 'expected { docs, revs, tombs } of equal lengths');
  }
  const out: CatalogRead['tombs'] = [];
  for (let i = 0; i < tombs.length; i += 3) out.push({ capability: tombs[i]!, id: tombs[i + 1]!, rev: tombs[i + 2]! });
  return { docs, revs, tombs: out };
}
