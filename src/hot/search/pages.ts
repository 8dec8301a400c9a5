// A search's or device query's page as a result (body, Link, ETag), computed without a
// client: the routes (answer.ts) reply with it, held requests (held-pages.ts) are woken with
// it. Also the result cache's admission (store) that both use.
import { nextQueryOf, type Canonical, type Filters } from './canonical.js';
import type { Config } from '../config.js';
import type { HeldRequests } from '../held/index.js';
import type { Index, PageBody } from './searches.js';
import type { Headers } from '../http/route.js';
import { PRODUCTION } from '../domain/keys.js';
import { ownBuffer, type CachedResult, type ResultCache } from './result-cache.js';
import { etagOf } from '../http/conditional.js';
import { pageEtag } from './pipeline/etag.js';

/** What a search needs of its thread (compose.ts's App has it all). */
export interface SearchContext {
  cfg: Config;
  index: Index;
  cache: ResultCache;
  /** this thread's held requests (Prefer: wait) */
  held: HeldRequests;
}

/**
 * Keep a result; a page after a cursor from its second request on (ResultCache.admitOnSecond).
 * `copy`: the body is a scratch buffer that will be reused, so what is kept is a copy of it.
 * A body kept is in a buffer of its own (ownBuffer): a small one sliced from Node's shared
 * pool would keep the whole 8 KiB slab alive, uncounted.
 */
export function store(app: SearchContext, key: string, ns: string, version: number, deep: boolean, r: CachedResult, copy = false): void {
  if (!deep || app.cache.admitOnSecond(key)) {
    const body = ownBuffer(r.body, copy);
    app.cache.set(key, ns, version, body === r.body ? r : { ...r, body });
  }
}

/** A device page's strong ETag: its bytes and its Link (the next page's cursor) together. */
export function withEtag(r: Omit<CachedResult, 'etag'>): CachedResult {
  const link = r.headers.find(([k]) => k === 'Link')?.[1] ?? '';
  return { ...r, etag: etagOf(r.body, link) };
}

/** A search page as a result: its body, its Link (when more follow), its ETag from its documents' digests. */
export function servicePage(path: string, c: Canonical, page: PageBody): CachedResult {
  const headers: Headers = [];
  let link = '';
  if (page.more && page.last) headers.push(['Link', (link = `<${path}?${nextQueryOf(c, page.last)}>; rel="next"`)]);
  return { body: page.body, headers, etag: pageEtag(page.digests, link) };
}

/**
 * The search page of `c` now, as the routes would compute it on a miss of the result cache
 * (the near cache's synchronous page when it has everything, else the async path), without
 * reading that cache (it may not have heard of the write that asks for this yet), and kept
 * in it (it then holds this state for the woken clients' next requests).
 */
export function freshServicePage(app: SearchContext, ns: string, key: string, path: string, c: Canonical): CachedResult | Promise<CachedResult> {
  const f = c.filters;
  const version = app.cache.version(ns);
  const now = app.index.nearBodyNow(ns, f, f.after ?? '', f.limit);
  if (now) {
    const r = servicePage(path, c, now);
    const own = { ...r, body: ownBuffer(r.body, true) }; // (the scratch buffer is reused by the next page)
    if (!f.after) store(app, key, ns, version, false, own);
    return own;
  }
  return app.index.searchBody(ns, f, f.after ?? '', f.limit).then((page) => {
    const r = servicePage(path, c, page);
    if (!f.after) store(app, key, ns, version, false, r);
    return r;
  });
}

/** The device page of `c` now (freshServicePage() for GET /devices). */
export async function freshDevicePage(app: SearchContext, key: string, path: string, c: Canonical): Promise<CachedResult> {
  const version = app.cache.version(PRODUCTION);
  const r = withEtag(await deviceBindings(app, path, undefined, c));
  if (!c.filters.after) store(app, key, PRODUCTION, version, false, r);
  return r;
}

interface Binding {
  serviceId: string;
  endpoint: string;
  deviceClass: string;
  protocol: string;
  capabilities: string[];
}

interface DocShape {
  id: string;
  endpoint: string;
  capabilities: string[];
  iot: { deviceClasses: string[]; protocols: string[] } | null;
}

function bindingsOf(d: DocShape, f: Filters): Binding[] {
  if (!d.iot) return [];
  const out: Binding[] = [];
  for (const dc of d.iot.deviceClasses) {
    if (f.deviceClass && dc !== f.deviceClass) continue;
    for (const p of d.iot.protocols) {
      if (f.protocol && p !== f.protocol) continue;
      out.push({ serviceId: d.id, endpoint: d.endpoint, deviceClass: dc, protocol: p, capabilities: d.capabilities });
    }
  }
  return out;
}

/**
 * A page of GET /devices: one binding per (service, deviceClass, protocol) of production IoT
 * profiles. The cursor is "<seq>" (continue after that service) or "<seq>.<k>" (continue
 * inside service <seq>, skipping its first k bindings).
 */
export async function deviceBindings(app: SearchContext, path: string, signal: AbortSignal | undefined, c: Canonical): Promise<Omit<CachedResult, 'etag'>> {
  const f = c.filters;
  let after = '';
  let skipSeq = '';
  let skip = 0;
  if (f.after) {
    const [s, k] = f.after.split('.');
    if (k !== undefined) {
      skipSeq = s!;
      skip = Number(k);
      after = String(Number(s) - 1);
    } else after = s!;
  }
  const out: Binding[] = [];
  const pos: { seq: string; k: number; n: number }[] = [];
  let more = false;
  for (;;) {
    const page = await app.index.search(PRODUCTION, { ...f, iotReady: true }, after, f.limit + 1, signal);
    for (let i = 0; i < page.docs.length && out.length <= f.limit; i++) {
      const seq = page.seqs[i]!;
      const all = bindingsOf(JSON.parse(page.docs[i]!) as DocShape, f);
      const start = seq === skipSeq ? skip : 0;
      for (let k = start; k < all.length && out.length <= f.limit; k++) {
        out.push(all[k]!);
        pos.push({ seq, k, n: all.length });
      }
    }
    if (out.length > f.limit) {
      more = true;
      break;
    }
    if (!page.more || !page.last) break;
    after = page.last;
  }
  const headers: Headers = [];
  if (more) {
    out.length = f.limit;
    const p = pos[f.limit - 1]!;
    const cursor = p.k + 1 < p.n ? `${p.seq}.${p.k + 1}` : p.seq;
    headers.push(['Link', `<${path}?${nextQueryOf(c, cursor)}>; rel="next"`]);
  }
  return { body: Buffer.from(JSON.stringify(out)), headers };
}
