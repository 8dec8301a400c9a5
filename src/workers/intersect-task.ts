// Piscina task: one page of a heavy intersection. The worker fetches the sets itself, over
// its own Redis connection, so that parsing replies of tens of thousands of members never
// runs on a serving thread's event loop; it returns the page's documents, moved (not copied).
// Fetched sets are kept per worker while their namespace version is unchanged.
import { Redis, Cluster } from 'ioredis';
import { move } from 'piscina';
import { decodeBuckets } from './buckets.js';
import { intersectSorted } from './intersect.js';
import { DIGEST_BYTES, digestBytes, digested } from '../hot/domain/digest.js';

export interface IntersectTask {
  redisUrl: string;
  clusterNodes: string[];
  /** namespace version the planner read; cached sets of another version are refetched */
  version: string;
  sets: string[];
  docsKey: string;
  after: number;
  limit: number;
  /** answer the page's JSON array itself (unpackBody) rather than the documents (unpackPage) */
  joined?: boolean;
}

/**
 * The page, packed into one buffer so it can be moved rather than copied:
 * [u32 more][u32 n][n × f64 seqs][digests][text]. The text is the documents joined with "\n"
 * (serialised JSON never holds a raw newline, so the join can be split again), or, for a
 * joined task, the answer's whole JSON array "[doc1,doc2,...]", used as it is; a joined
 * task also carries the documents' digests (n × 16 bytes, domain/digest.ts), for the page's ETag.
 */
export function packPage(seqs: Float64Array, parts: Uint8Array[], more: boolean, digests: Uint8Array = new Uint8Array(0)): Uint8Array {
  let size = 0;
  for (const p of parts) size += p.length;
  const out = new Uint8Array(8 + seqs.length * 8 + digests.length + size);
  const view = new DataView(out.buffer);
  view.setUint32(0, more ? 1 : 0, true);
  view.setUint32(4, seqs.length, true);
  for (let i = 0; i < seqs.length; i++) view.setFloat64(8 + i * 8, seqs[i]!, true);
  let at = 8 + seqs.length * 8;
  out.set(digests, at);
  at += digests.length;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function header(buf: Uint8Array): { seqs: number[]; more: boolean; textAt: number } {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const n = view.getUint32(4, true);
  const seqs: number[] = [];
  for (let i = 0; i < n; i++) seqs.push(view.getFloat64(8 + i * 8, true));
  return { seqs, more: view.getUint32(0, true) === 1, textAt: 8 + n * 8 };
}

export function unpackPage(buf: Uint8Array): { seqs: number[]; docs: string[]; more: boolean } {
  const h = header(buf);
  const text = Buffer.from(buf.buffer, buf.byteOffset + h.textAt, buf.byteLength - h.textAt).toString();
  return { seqs: h.seqs, more: h.more, docs: text ? text.split('\n') : [] };
}

/** A joined page: its JSON array as a view of the moved memory (no copy, no decoding), and its digests. */
export function unpackBody(buf: Uint8Array): { seqs: number[]; body: Buffer; more: boolean; digests: Uint8Array } {
  const h = header(buf);
  const all = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const at = h.textAt + h.seqs.length * DIGEST_BYTES;
  return { seqs: h.seqs, more: h.more, body: all.subarray(at), digests: all.subarray(h.textAt, at) };
}

const NL = Buffer.from('\n');
const COMMA = Buffer.from(',');
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');
const NULL = Buffer.from('null');

/** The documents as the parts of the page's text (see packPage). */
export function docParts(docs: (Buffer | null)[], joined: boolean): Buffer[] {
  const parts: Buffer[] = joined ? [OPEN] : [];
  docs.forEach((d, i) => {
    if (i > 0) parts.push(joined ? COMMA : NL);
    parts.push(d ?? NULL);
  });
  if (joined) parts.push(CLOSE);
  return parts;
}

let client: Redis | Cluster | null = null;
const setCache = new Map<string, { version: string; members: Float64Array }>();
const SET_CACHE_MAX = 64;

function redis(t: IntersectTask): Redis | Cluster {
  if (!client) {
    client = t.clusterNodes.length
      ? new Cluster(t.clusterNodes.map((n) => ({ host: n.split(':')[0]!, port: Number(n.split(':')[1]) })), { redisOptions: { maxRetriesPerRequest: 1 } })
      : new Redis(t.redisUrl, { maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
  }
  return client;
}

async function members(r: Redis | Cluster, key: string, version: string): Promise<Float64Array> {
  const hit = setCache.get(key);
  if (hit && hit.version === version) return hit.members;
  const arr = decodeBuckets(Object.entries(await r.hgetallBuffer(key)));
  if (setCache.size >= SET_CACHE_MAX) setCache.delete(setCache.keys().next().value!);
  setCache.set(key, { version, members: arr });
  return arr;
}

export default async function intersectPage(t: IntersectTask): Promise<Uint8Array> {
  const r = redis(t);
  const arrays = await Promise.all(t.sets.map((k) => members(r, k, t.version)));
  const hits = intersectSorted(arrays, t.after, t.limit + 1);
  const more = hits.length > t.limit;
  const seqs = more ? hits.slice(0, t.limit) : hits;
  // the documents as bytes, never decoded here: they are joined and moved as they came
  const docs = seqs.length ? await r.hmgetBuffer(t.docsKey, ...Array.from(seqs, String)) : [];
  const digests = t.joined ? digestBytes(docs.map((d) => digested(d ?? NULL))) : undefined;
  return move(packPage(seqs, docParts(docs, !!t.joined), more, digests)) as Uint8Array;
}

/**
 * A heavy intersection over the near cache's sets (src/hot/index/near.ts): they arrive as
 * Float64Arrays on SharedArrayBuffers, so this thread reads the serving thread's memory
 * without a copy; the sets never change in place (a change makes a new array).
 */
export function intersectShared(t: { sets: Float64Array[]; after: number; max: number }): Float64Array {
  return intersectSorted(t.sets, t.after, t.max);
}
