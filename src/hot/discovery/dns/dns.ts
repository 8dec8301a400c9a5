// The DNS server of the contract ("Discovery for other tools" → "DNS"), UDP and TCP on one
// address and port, authoritative for DNS_DOMAIN, fed by a DnsSource. The entry module of
// discovery/dns: the composition root builds one with the DNS_* settings, a source over the
// index and metrics over prom-client, then start() and stop() it. What exists and what each
// question gets: answer.ts; the zone's names: names.ts; the records: records.ts; UDP's rate
// limit: rate-limit.ts; TCP framing and caps: tcp.ts; parsing and encoding: wire.ts.
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { lookup as dnsLookup, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import { fit, Resolver, type Resolution } from './answer.js';
import { zoneOf } from './names.js';
import { ResponseRateLimiter } from './rate-limit.js';
import { Records } from './records.js';
import { DnsTcp } from './tcp.js';
import { DNS_DEFAULTS, type DnsMetrics, type DnsOptions, type DnsRcode, type DnsTransport } from './types.js';
import { encodeRefusal, encodeReply, MAX_UDP, parseQuery, TC, type Parsed, type Query } from './wire.js';

export { DNS_DEFAULTS } from './types.js';
export type { DnsDropReason, DnsMetrics, DnsOptions, DnsRcode, DnsService, DnsSource, DnsTransport } from './types.js';

const MAX_TCP = 65535;
/** attempts at one port free for both UDP and TCP when the kernel picks it */
const PORT_ATTEMPTS = 8;

function whole(name: string, v: number, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) throw new Error(`DNS ${name} must be an integer from ${min} to ${max}, not ${v}`);
  return v;
}

export class DnsServer {
  private readonly host: string;
  private readonly wantPort: number;
  private readonly maxRecords: number;
  private readonly maxInFlight: number;
  private readonly metrics: DnsMetrics | null;
  private readonly resolver: Resolver;
  private readonly limiter: ResponseRateLimiter;
  private readonly tcp: DnsTcp;
  private udp: Socket | null = null;
  private inFlight = 0;
  private boundPort = 0;

  /** Checks the options (a bad one throws, naming it); opens nothing. */
  constructor(o: DnsOptions) {
    const d = { ...DNS_DEFAULTS, ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) } as Required<DnsOptions>;
    this.host = d.host;
    this.wantPort = whole('port', d.port, 0, 65535);
    const ttl = whole('ttl', d.ttl, 0, 2 ** 31 - 1);
    this.maxRecords = whole('maxRecords', d.maxRecords, 1, 65535);
    this.maxInFlight = whole('maxInFlight', d.maxInFlight, 1, 1e6);
    this.metrics = o.metrics ?? null;
    const zone = zoneOf(d.domain);
    const reachable = isIP(d.host) !== 0 && d.host !== '0.0.0.0' && d.host !== '::';
    this.resolver = new Resolver(zone, o.source, new Records(zone, ttl, reachable ? d.host : null));
    this.limiter = new ResponseRateLimiter({
      perSecond: whole('ratePerAddress', d.ratePerAddress, 0, 1e9),
      maxAddresses: whole('rateTableSize', d.rateTableSize, 1, 1e7),
      now: d.now ?? Date.now,
    });
    this.tcp = new DnsTcp({
      answer: (msg) => this.answerTcp(msg),
      perAddress: whole('tcpPerAddress', d.tcpPerAddress, 1, 1e6),
      total: whole('tcpTotal', d.tcpTotal, 1, 1e6),
      idleMs: whole('tcpIdleMs', d.tcpIdleMs, 1, 2 ** 31 - 1),
      metrics: this.metrics,
    });
  }

  /** The port both sockets are bound to (after start()). */
  get port(): number {
    return this.boundPort;
  }

  /** Binds UDP, then TCP on the same port; with port 0, a port free for both. */
  async start(): Promise<void> {
    if (this.udp) return;
    for (let attempt = 1; ; attempt++) {
      let bound = false;
      const udp = createSocket({ type: isIP(this.host) === 6 ? 'udp6' : 'udp4', lookup: (a, f, cb) => (bound ? literalLookup(a, f, cb) : lookupAsync(a, f, cb)) });
      try {
        udp.bind({ address: this.host, port: this.wantPort, exclusive: true });
        await Promise.race([once(udp, 'listening'), once(udp, 'error').then(([e]) => Promise.reject(e as Error))]);
        bound = true;
        const port = udp.address().port;
        await this.tcp.listen(this.host, port);
        this.boundPort = port;
      } catch (e) {
        udp.close();
        const retry = this.wantPort === 0 && (e as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempt < PORT_ATTEMPTS;
        if (retry) continue;
        throw e;
      }
      // after binding, a send error (an unreachable client) is counted, never thrown
      udp.on('error', () => this.metrics?.dropped('send-error'));
      udp.on('message', (msg, rinfo) => this.onUdp(msg, rinfo));
      this.udp = udp;
      return;
    }
  }

  async stop(): Promise<void> {
    const udp = this.udp;
    this.udp = null;
    if (udp) {
      const closed = once(udp, 'close');
      udp.close();
      await closed;
    }
    await this.tcp.close();
  }

  private onUdp(msg: Buffer, from: RemoteInfo): void {
    const parsed = parseQuery(msg);
    if (parsed.kind === 'drop') {
      this.metrics?.dropped('malformed');
      return;
    }
    const decision = this.limiter.take(from.address);
    if (decision !== 'answer') {
      this.metrics?.rateLimited(decision);
      if (decision === 'slip') this.send(slip(parsed), from, null);
      return;
    }
    if (parsed.kind === 'error') {
      this.send(encodeRefusal(parsed.refusal), from, parsed.refusal.rcode);
      return;
    }
    if (this.inFlight >= this.maxInFlight) {
      this.metrics?.dropped('busy');
      return;
    }
    const q = parsed.query;
    const limit = q.edns ? Math.min(MAX_UDP, Math.max(512, q.edns.udpSize)) : 512;
    const r = this.reply(q, limit);
    if (!('then' in r)) return this.send(r[0], from, r[1]);
    this.inFlight++;
    void r.then(([out, rcode]) => {
      this.inFlight--;
      this.send(out, from, rcode);
    });
  }

  /** (a send error is the socket's 'error' event, counted there: no callback, no tick a packet) */
  private send(out: Buffer, to: RemoteInfo, rcode: DnsRcode | null): void {
    const udp = this.udp;
    if (!udp) return;
    udp.send(out, to.port, to.address);
    if (rcode) this.count(rcode, 'udp');
  }

  private count(rcode: DnsRcode, transport: DnsTransport): void {
    this.metrics?.answered(rcode, transport);
  }

  private async answerTcp(msg: Buffer): Promise<Buffer | null> {
    const parsed = parseQuery(msg);
    if (parsed.kind === 'drop') return null;
    if (parsed.kind === 'error') {
      this.count(parsed.refusal.rcode, 'tcp');
      return encodeRefusal(parsed.refusal);
    }
    const [out, rcode] = await this.reply(parsed.query, MAX_TCP);
    this.count(rcode, 'tcp');
    return out;
  }

  /**
   * The encoded answer within `limit` bytes, now when the resolver has it at hand, else a
   * promise of it; a failing source or record is SERVFAIL. Never throws or rejects.
   */
  private reply(q: Query, limit: number): [Buffer, DnsRcode] | Promise<[Buffer, DnsRcode]> {
    try {
      const res = this.resolver.resolve(q);
      if (!('then' in res)) return this.encoded(q, res, limit);
      return res.then((x) => this.encoded(q, x, limit)).catch(() => this.failed(q, limit));
    } catch {
      return this.failed(q, limit);
    }
  }

  private encoded(q: Query, res: Resolution, limit: number): [Buffer, DnsRcode] {
    const r = fit(q, res, limit, this.maxRecords);
    return [encodeReply(q, r), r.rcode];
  }

  private failed(q: Query, limit: number): [Buffer, DnsRcode] {
    const r = fit(q, { rcode: 'SERVFAIL', authoritative: false, units: [], authorities: [] }, limit, 0);
    return [encodeReply(q, r), 'SERVFAIL'];
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string, family: number) => void;

/**
 * The socket's address look-up once it is bound: an answer goes to the address its query came
 * from, an IP literal, given back at once (node's default look-up answers a literal a tick
 * later: a tick a packet). Before, and for a name, dns.lookup's (bind() expects its answer
 * after it returned: 'listening' would come before anyone listens).
 */
function literalLookup(address: string, family: number | LookupOneOptions, cb: LookupCallback): void {
  const v = isIP(address);
  if (v !== 0) return cb(null, address, v);
  lookupAsync(address, family, cb);
}

function lookupAsync(address: string, family: number | LookupOneOptions, cb: LookupCallback): void {
  // (node's dgram passes the family as a number; its typings, as options)
  if (typeof family === 'number') dnsLookup(address, family, cb);
  else dnsLookup(address, family, cb);
}

/** The empty TC answer a rate-limited query may get: header and question only. */
function slip(p: Exclude<Parsed, { kind: 'drop' }>): Buffer {
  if (p.kind === 'error') return encodeRefusal(p.refusal, TC);
  return encodeReply(p.query, { rcode: 'NOERROR', authoritative: true, truncated: true, answers: [], authorities: [], additionals: [] });
}
