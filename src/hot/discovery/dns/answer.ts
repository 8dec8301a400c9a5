// What a question gets (contract, "DNS"). The meaning of "exists":
//
// - a service name exists while at least one service has all its capabilities: the source's
//   empty list is NXDOMAIN, so a resolver that minimises queries (RFC 9156) never learns that a
//   name with services below it is missing; `<c1>.service` has services whenever `<c2>.<c1>` has;
// - an `<id>.addr` name exists while the source knows the id and its endpoint's host is an
//   IP literal (only then is it ever an SRV target);
// - the apex, `ns`, `service`, `_tcp.service` and `addr` always exist;
// - an existing name without records of the asked type (A on a service whose hosts are all
//   names, TXT anywhere, AAAA on an IPv4 address) is NOERROR with no answer and the SOA;
// - a name outside the zone is REFUSED; a class other than IN is REFUSED (this server holds
//   nothing in other classes); AXFR / IXFR are REFUSED (the zone is not transferable);
// - ANY gets one type, as RFC 8482 allows: SRV on a service name, the address on an addr
//   name, SOA and NS at the apex.
//
// Records come in a new random order each time; a size limit (UDP) keeps the first that fit
// and sets TC when any answer was left out; `maxRecords` caps the answers without TC.
import type { Answer } from 'dns-packet';
import { classify, type Zone } from './names.js';
import { targetOf, type Records, type Unit } from './records.js';
import type { DnsService, DnsSource } from './types.js';
import { CLASS_IN, OPT_LENGTH, recordsLength, TYPE, type Query, type Reply } from './wire.js';

/** A reply before it is fitted to a size: answers come with their glue. */
export interface Resolution {
  rcode: Reply['rcode'];
  authoritative: boolean;
  units: Unit[];
  /** the SOA, when there is no answer */
  authorities: Answer[];
}

const refused: Resolution = { rcode: 'REFUSED', authoritative: false, units: [], authorities: [] };

export class Resolver {
  constructor(
    private readonly zone: Zone,
    private readonly source: DnsSource,
    private readonly records: Records,
  ) {}

  private answered(units: readonly Unit[]): Resolution {
    if (units.length === 0) return this.negative('NOERROR');
    // (a copy: the records' units are shared by every answer made from one list)
    return { rcode: 'NOERROR', authoritative: true, units: shuffle([...units]), authorities: [] };
  }

  private negative(rcode: 'NOERROR' | 'NXDOMAIN'): Resolution {
    return { rcode, authoritative: true, units: [], authorities: [this.records.soa()] };
  }

  /** The resolution of `q`: made now when the source has what it needs at hand, else a promise. */
  resolve(q: Query): Resolution | Promise<Resolution> {
    const { labels, type } = q.question;
    if (q.edns && q.edns.version > 0) return { rcode: 'BADVERS', authoritative: false, units: [], authorities: [] };
    const name = classify(labels, this.zone);
    if (name.kind === 'outside' || q.question.class !== CLASS_IN) return refused;
    if (type === TYPE.AXFR || type === TYPE.IXFR) return refused;
    // the owner of answers is the name as asked
    const owner = labels.join('.');
    switch (name.kind) {
      case 'apex':
        if (type === TYPE.SOA) return this.answered([{ answer: this.records.soa(), glue: [] }]);
        if (type === TYPE.NS) return this.answered([this.records.ns()]);
        if (type === TYPE.ANY) return this.answered([{ answer: this.records.soa(), glue: [] }, this.records.ns()]);
        return this.negative('NOERROR');
      case 'ns':
        return this.answered(this.addressesOf(type, (ip) => this.records.nsAddresses(owner, ip)));
      case 'structure':
        return this.negative('NOERROR');
      case 'unknown':
        return this.negative('NXDOMAIN');
      case 'service': {
        const services = this.source.servicesWith(name.capabilities);
        return 'then' in services ? services.then((l) => this.ofService(owner, type, l)) : this.ofService(owner, type, services);
      }
      case 'addr':
        return this.ofAddr(owner, type, name.id);
    }
  }

  private ofService(owner: string, type: number, services: readonly DnsService[]): Resolution {
    if (services.length === 0) return this.negative('NXDOMAIN');
    if (type === TYPE.SRV || type === TYPE.ANY) return this.answered(this.records.srv(owner, services));
    return this.answered(this.addressesOf(type, (ip) => this.records.addresses(owner, services, ip)));
  }

  private async ofAddr(owner: string, type: number, id: string): Promise<Resolution> {
    const s = await this.source.serviceById(id);
    const ip = s ? (targetOf(s.endpoint)?.ip ?? 0) : 0;
    if (!s || ip === 0) return this.negative('NXDOMAIN');
    const units = this.addressesOf(type === TYPE.ANY ? (ip === 4 ? TYPE.A : TYPE.AAAA) : type, (v) => this.records.addresses(owner, [s], v));
    return this.answered(units);
  }

  private addressesOf(type: number, of: (ip: 4 | 6) => readonly Unit[]): readonly Unit[] {
    if (type === TYPE.A) return of(4);
    if (type === TYPE.AAAA) return of(6);
    return [];
  }
}

/** Fisher-Yates, in place. */
function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * The reply that fits `limit` bytes with at most `maxRecords` answers: units are kept in
 * order while they fit; TC when `limit` (not `maxRecords`) left one out. A negative answer
 * whose SOA does not fit (a long question under a long domain) goes without it, with TC.
 */
export function fit(q: Query, res: Resolution, limit: number, maxRecords: number): Reply {
  let size = 12 + q.question.raw.length + (q.edns ? OPT_LENGTH : 0);
  const reply: Reply = { rcode: res.rcode, authoritative: res.authoritative, truncated: false, answers: [], authorities: [], additionals: [] };
  const auth = recordsLength(res.authorities);
  if (size + auth > limit) {
    reply.truncated = res.authorities.length > 0;
  } else {
    size += auth;
    reply.authorities = res.authorities;
  }
  for (const u of res.units) {
    if (reply.answers.length >= maxRecords) break;
    const n = recordsLength([u.answer, ...u.glue]);
    if (size + n > limit) {
      reply.truncated = true;
      break;
    }
    size += n;
    reply.answers.push(u.answer);
    reply.additionals.push(...u.glue);
  }
  return reply;
}
