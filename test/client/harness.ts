// What the client's tests share: the client package as its users import it (client/src
// compiled by client/tsconfig.json) and a fetch that records every request and never
// follows a redirect, so a 302 reaches the client (which throws) and the record shows it.
import type { Fetch } from '../../client/src/index.js';

export interface Sent {
  method: string;
  url: string;
  status: number;
  ifNoneMatch: string | null;
  retryAfter: string | null;
}

export function recordingFetch(): { fetch: Fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  const f: Fetch = async (url, init) => {
    const res = await fetch(url, { ...init, redirect: 'manual' });
    const h = new Headers(init.headers);
    sent.push({ method: init.method ?? 'GET', url, status: res.status, ifNoneMatch: h.get('if-none-match'), retryAfter: res.headers.get('retry-after') });
    return res;
  };
  return { fetch: f, sent };
}

/** the query string of a recorded URL ('' when none) */
export const queryOf = (url: string) => new URL(url).search.slice(1);
