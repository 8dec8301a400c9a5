// Which name of the zone a question asks for (contract, "DNS"). The zone's tree is fixed:
//
//   <domain>                          apex: SOA, NS
//   ns.<domain>                       the NS target: A / AAAA of DNS_HOST when it is an address
//   service.<domain>                  exists, no records (parent of the service names)
//   <cN>…<c1>.service.<domain>        the services with every capability c1…cN
//   _tcp.service.<domain>             exists, no records (parent of the RFC 2782 form)
//   _<cN>…_<c1>._tcp.service.<domain> the same services, RFC 2782 form (each label `_`-prefixed)
//   addr.<domain>                     exists, no records (parent of the address names)
//   <id>.addr.<domain>                A / AAAA of the service's IP-literal endpoint
//
// Anything else under the domain does not exist. Labels compare ASCII case-insensitively;
// a capability label is one of `[a-z0-9_-]`, 1 to 63 long (so a capability with a `.`, or
// of 64 characters, has no name); a label that cannot be one makes the name unknown.

export type DnsName =
  | { kind: 'outside' }
  | { kind: 'apex' }
  | { kind: 'ns' }
  /** service., _tcp.service., addr.: always there, never with records */
  | { kind: 'structure' }
  | { kind: 'service'; capabilities: string[] }
  | { kind: 'addr'; id: string }
  | { kind: 'unknown' };

/** The zone: its labels in lower case, and its name as dns-packet writes it (no final dot). */
export interface Zone {
  labels: readonly string[];
  name: string;
}

/** capabilities a service can have at most (domain/schemas.ts): more distinct labels match nothing */
const MAX_CAPABILITIES = 32;
const CAPABILITY_LABEL = /^[a-z0-9_-]{1,63}$/;
const ID_LABEL = /^[A-Za-z0-9_-]{1,63}$/;
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

const UPPER = /[A-Z]/;

/** DNS folds only ASCII letters; String#toLowerCase would fold Latin-1 letters too. */
export function asciiLower(s: string): string {
  // (most names come in lower case: a test, not a replace with a callback)
  return UPPER.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s;
}

/** The zone of DNS_DOMAIN (`registry.`, `registry`, `Example.COM.`), or a thrown Error saying why not. */
export function zoneOf(domain: string): Zone {
  const d = asciiLower(domain).replace(/\.$/, '');
  const labels = d === '' ? [] : d.split('.');
  // room for the longest names built under it: hostmaster.<domain>, <id>.addr.<domain>
  if (d.length > 180 || !labels.every((l) => HOST_LABEL.test(l))) {
    throw new Error(`DNS domain ${JSON.stringify(domain)} is not a host name of at most 180 characters`);
  }
  return { labels, name: d };
}

/** `labels` then the zone, as a name dns-packet writes. */
export function nameIn(zone: Zone, ...labels: string[]): string {
  return [...labels, ...zone.labels].join('.') || '.';
}

/** What `labels` (the question's, in the case asked, one string per wire label) names. */
export function classify(labels: readonly string[], zone: Zone): DnsName {
  const rel = labels.length - zone.labels.length;
  if (rel < 0) return { kind: 'outside' };
  for (let i = 0; i < zone.labels.length; i++) {
    if (asciiLower(labels[rel + i]!) !== zone.labels[i]) return { kind: 'outside' };
  }
  if (rel === 0) return { kind: 'apex' };
  const own = labels.slice(0, rel);
  const top = asciiLower(own[rel - 1]!);
  if (top === 'ns' && rel === 1) return { kind: 'ns' };
  if (top === 'addr') {
    if (rel === 1) return { kind: 'structure' };
    return rel === 2 && ID_LABEL.test(own[0]!) ? { kind: 'addr', id: own[0]! } : { kind: 'unknown' };
  }
  if (top !== 'service') return { kind: 'unknown' };
  return serviceName(own.slice(0, -1).map(asciiLower));
}

/** The labels left of `service`, nearest last. */
function serviceName(caps: string[]): DnsName {
  if (caps.length === 0) return { kind: 'structure' };
  let names = caps;
  if (caps[caps.length - 1] === '_tcp') {
    // the RFC 2782 form; a capability named `_tcp` is reached only through it
    names = caps.slice(0, -1);
    if (names.length === 0) return { kind: 'structure' };
    if (!names.every((l) => l.startsWith('_'))) return { kind: 'unknown' };
    names = names.map((l) => l.slice(1));
  }
  const distinct = [...new Set(names)];
  if (distinct.length > MAX_CAPABILITIES || !distinct.every((c) => CAPABILITY_LABEL.test(c))) return { kind: 'unknown' };
  return { kind: 'service', capabilities: distinct };
}
