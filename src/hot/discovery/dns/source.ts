// The DNS server's view of the registry (DnsSource, types.ts): production services that are
// not critical, from the same index and near cache as /services (search/ all(): the
// `healthy` set with the capabilities' sets). A name whose sets and documents this thread
// holds is answered without Redis (allNow); the list a name gave is kept until the next
// write to production (the result cache's namespace version, which every applied write
// bumps on every thread) or RESULT_CACHE_TTL_MS, whichever comes first, so a resolver's
// repeated questions parse nothing.
//
// `<id>.addr` names: ids are case-sensitive, DNS names are not (a resolver may change the
// case of a name it forwards). Every service this thread put in an answer is remembered by
// its lower-cased id, so such a name resolves in any case; another id is looked up as asked.
import { noFilters } from '../../domain/dimensions.js';
import { PRODUCTION } from '../../domain/keys.js';
import { all, allNow, type AllMatches, type Index } from '../../search/index.js';
import { ResultCache, stringBytes } from '../../search/index.js';
import { asciiLower } from './names.js';
import type { DnsService, DnsSource } from './types.js';

interface Listed {
  services: DnsService[];
}

export interface IndexDnsSourceOptions {
  /** most services one name lists (DISCOVERY_MAX_TARGETS): the first ones in seq order beyond */
  max: number;
  /** how long a list is kept at most (RESULT_CACHE_TTL_MS: the bound should a write's invalidation be lost) */
  ttlMs: number;
  /** bytes of the lists kept, and of the ids remembered */
  bytes?: number;
}

/** bytes of a DnsService beside its strings: the object and its array slot */
const SERVICE_OVERHEAD = 64;
const serviceBytes = (s: DnsService) => SERVICE_OVERHEAD + stringBytes(s.id) + stringBytes(s.endpoint);

export class IndexDnsSource implements DnsSource {
  private readonly lists: ResultCache<Listed>;
  /** lower-cased id -> the service as last listed, with the production version it was listed at */
  private readonly ids = new Map<string, { s: DnsService; version: number }>();
  private idBytes = 0;
  private readonly maxIdBytes: number;

  constructor(
    private readonly index: Index,
    /** the result cache whose production version every applied write bumps */
    private readonly results: { version(ns: string): number },
    private readonly o: IndexDnsSourceOptions,
  ) {
    const bytes = o.bytes ?? 8 * 1024 * 1024;
    this.lists = new ResultCache<Listed>(4096, o.ttlMs, bytes / 2, (v) => v.services.reduce((n, s) => n + serviceBytes(s), 64));
    this.maxIdBytes = bytes / 2;
  }

  /** A list kept, or made now from what the near cache holds; else a promise (Redis, the pool). */
  servicesWith(capabilities: readonly string[]): readonly DnsService[] | Promise<readonly DnsService[]> {
    const caps = capabilities.length > 1 ? [...capabilities].sort() : capabilities;
    const version = this.results.version(PRODUCTION);
    const key = version + '\0' + caps.join('\0');
    const hit = this.lists.get(key, 'dns');
    if (hit) return hit.services;
    const f = { ...noFilters(), capabilities: [...caps], healthy: true };
    const now = allNow(this.index, PRODUCTION, f, this.o.max);
    if (now) return this.listed(key, version, now);
    return all(this.index, PRODUCTION, f, this.o.max).then((m) => this.listed(key, version, m));
  }

  /** The services of matches, kept under `key` and remembered by id. */
  private listed(key: string, version: number, m: AllMatches): readonly DnsService[] {
    const services = (JSON.parse(m.body.toString()) as ({ id: string; endpoint: string } | null)[]).filter((d) => d !== null).map((d) => ({ id: d.id, endpoint: d.endpoint }));
    this.lists.set(key, 'dns', this.lists.version('dns'), { services });
    for (const s of services) this.remember(s, version);
    return services;
  }

  async serviceById(id: string): Promise<DnsService | null> {
    const known = this.ids.get(asciiLower(id));
    if (known && known.version === this.results.version(PRODUCTION)) return known.s;
    const row = await this.index.getService(PRODUCTION, known?.s.id ?? id);
    if (!row) return null;
    const doc = JSON.parse(row.doc) as { id: string; endpoint: string; health: { status: string } };
    return doc.health.status === 'critical' ? null : { id: doc.id, endpoint: doc.endpoint };
  }

  private remember(s: DnsService, version: number): void {
    const k = asciiLower(s.id);
    const had = this.ids.get(k);
    if (!had) {
      const n = serviceBytes(s) + stringBytes(k);
      if (this.idBytes + n > this.maxIdBytes) {
        this.ids.clear();
        this.idBytes = 0;
      }
      this.idBytes += n;
    }
    this.ids.set(k, { s, version });
  }
}
