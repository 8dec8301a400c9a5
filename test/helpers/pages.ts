// Every page of a search, following Link: the near cache's tests (http/near-cache,
// http/near-results) compare a node's pages with the Redis path's.
import type { TestServer } from './server.js';

/**
 * Every page of `path` (following Link), as the links, ETags and bodies: equal lists mean
 * equal answers and equal tags (a page's ETag is made from its documents' digests on every
 * path: near cache, whole answer, Redis, pool).
 */
export async function pages(s: TestServer, path: string): Promise<string[]> {
  const out: string[] = [];
  let p: string | null = path;
  while (p) {
    const r = await s.req(p);
    if (r.status !== 200) throw new Error(`${p}: ${r.status}`);
    out.push(`${r.headers.get('link') ?? ''} ${r.headers.get('etag') ?? 'no etag'} ${await r.text()}`);
    p = /<([^>]+)>/.exec(r.headers.get('link') ?? '')?.[1] ?? null;
  }
  return out;
}
