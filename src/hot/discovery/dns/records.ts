// The records of the zone, built from services (contract, "DNS"): SRV with priority 1 and
// weight 1 whose target is the endpoint's host, or `<id>.addr.<domain>` for an IP-literal
// host with its A / AAAA as glue; A / AAAA of the IP-literal endpoints; the zone's SOA and NS.
// A record that cannot be written (a host label over 63 bytes, an id that is no label) is
// left out; the name still exists.
import { isIP } from 'node:net';
import type { Answer, SoaAnswer, SrvAnswer } from 'dns-packet';
import { listenOf } from '../endpoint.js';
import { nameIn, type Zone } from './names.js';
import type { DnsService } from './types.js';

/** Where an endpoint listens: its host (IPv6 without brackets), port, and IP version (0: a name). */
export interface Target {
  host: string;
  port: number;
  ip: 0 | 4 | 6;
}

/** An answer record with the additional records that go with it (an SRV and its glue). */
export interface Unit {
  answer: Answer;
  glue: Answer[];
}

const ID_LABEL = /^[A-Za-z0-9_-]{1,63}$/;
// printable ASCII without the dot, as the endpoint's WHATWG host can hold it
const WIRE_LABEL = /^[\x21-\x2d\x2f-\x7e]{1,63}$/;

/** endpoints parsed lately (a URL parse per service and answer was a third of an answer's cost); emptied when full */
const targets = new Map<string, Target | null>();
const TARGETS_MAX = 65_536;

/** The endpoint's host and port, or null when it is no http(s) URL (discovery/endpoint.ts). */
export function targetOf(endpoint: string): Target | null {
  const known = targets.get(endpoint);
  if (known !== undefined) return known;
  const l = listenOf(endpoint);
  const v = l ? isIP(l.host) : 0;
  const t: Target | null = l ? { host: l.host, port: l.port, ip: v === 4 || v === 6 ? v : 0 } : null;
  if (targets.size >= TARGETS_MAX) targets.clear();
  targets.set(endpoint, t);
  return t;
}

/** A host name as an SRV target (without a final dot), or null when it does not fit the wire. */
function hostTarget(host: string): string | null {
  const h = host.endsWith('.') ? host.slice(0, -1) : host;
  if (h.length === 0 || h.length > 253) return null;
  return h.split('.').every((l) => WIRE_LABEL.test(l)) ? h : null;
}

export class Records {
  /**
   * The units made from a list of services, by owner and kind, for as long as the list lives:
   * a source hands the same list until the registry changes (dns/source.ts), and the records
   * of a unit are encoded once (wire.ts recordWire). Never changed after they are made.
   */
  private readonly made = new WeakMap<readonly DnsService[], Map<string, readonly Unit[]>>();
  private readonly soaRecord: SoaAnswer;

  constructor(
    private readonly zone: Zone,
    private readonly ttl: number,
    /** DNS_HOST, when it is one address a resolver can reach (`ns.<domain>`'s A / AAAA) */
    private readonly nsAddress: string | null,
  ) {
    this.soaRecord = {
      name: nameIn(this.zone),
      type: 'SOA',
      ttl: this.ttl,
      data: { mname: nameIn(this.zone, 'ns'), rname: nameIn(this.zone, 'hostmaster'), serial: 1, refresh: 3600, retry: 600, expire: 86400, minimum: this.ttl },
    };
  }

  /** `make()`'s units for `services` under `key`, made once per list. */
  private kept(services: readonly DnsService[], key: string, make: () => Unit[]): readonly Unit[] {
    let byKey = this.made.get(services);
    if (!byKey) this.made.set(services, (byKey = new Map()));
    let units = byKey.get(key);
    if (!units) byKey.set(key, (units = make()));
    return units;
  }

  /** One SRV per distinct target and port, each with the glue of an `addr` target (shared: copy before reordering). */
  srv(owner: string, services: readonly DnsService[]): readonly Unit[] {
    return this.kept(services, 'SRV ' + owner, () => this.makeSrv(owner, services));
  }

  private makeSrv(owner: string, services: readonly DnsService[]): Unit[] {
    const units: Unit[] = [];
    const seen = new Set<string>();
    for (const s of services) {
      const t = targetOf(s.endpoint);
      if (!t) continue;
      let target: string | null;
      let glue: Answer[] = [];
      if (t.ip !== 0) {
        if (!ID_LABEL.test(s.id)) continue;
        target = nameIn(this.zone, s.id, 'addr');
        glue = [this.address(target, t.ip, t.host)];
      } else {
        target = hostTarget(t.host);
        if (target === null) continue;
      }
      const key = `${target.toLowerCase()} ${t.port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const answer: SrvAnswer = { name: owner, type: 'SRV', ttl: this.ttl, data: { priority: 1, weight: 1, port: t.port, target } };
      units.push({ answer, glue });
    }
    return units;
  }

  /** The distinct addresses of one IP version among the services' endpoints (shared: copy before reordering). */
  addresses(owner: string, services: readonly DnsService[], ip: 4 | 6): readonly Unit[] {
    return this.kept(services, `${ip} ${owner}`, () => this.makeAddresses(owner, services, ip));
  }

  private makeAddresses(owner: string, services: readonly DnsService[], ip: 4 | 6): Unit[] {
    const seen = new Set<string>();
    for (const s of services) {
      const t = targetOf(s.endpoint);
      if (t?.ip === ip) seen.add(t.host);
    }
    return [...seen].map((a) => ({ answer: this.address(owner, ip, a), glue: [] }));
  }

  /** The A / AAAA record of one address. */
  address(owner: string, ip: 4 | 6, host: string): Answer {
    return { name: owner, type: ip === 4 ? 'A' : 'AAAA', ttl: this.ttl, data: host };
  }

  /** `ns.<domain>`'s own address records, of one IP version. */
  nsAddresses(owner: string, ip: 4 | 6): Unit[] {
    const a = this.nsAddress;
    return a !== null && isIP(a) === ip ? [{ answer: this.address(owner, ip, a), glue: [] }] : [];
  }

  /** The apex's NS, with the address of its target as glue when there is one. */
  ns(): Unit {
    const target = nameIn(this.zone, 'ns');
    const a = this.nsAddress;
    const v = a === null ? 0 : isIP(a);
    const glue = a !== null && (v === 4 || v === 6) ? [this.address(target, v, a)] : [];
    return { answer: { name: nameIn(this.zone), type: 'NS', ttl: this.ttl, data: target }, glue };
  }

  /**
   * The zone's SOA. Nothing transfers the zone, so the serial and timers are only read by
   * resolvers for negative caching: `minimum` is the TTL, so a new service name is answered
   * within one TTL of a NXDOMAIN.
   */
  soa(): SoaAnswer {
    return this.soaRecord;
  }
}
