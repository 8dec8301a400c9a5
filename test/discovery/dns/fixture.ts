// The DNS tests' fixtures: a DnsSource over a list the test edits, a server on a free port,
// counting metrics, Debian's real `dig` (installed by scripts/services.sh dig) with its output
// read into sections, and raw UDP / TCP exchanges for what dig cannot send.
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import dnsPacket from 'dns-packet';
import type { Test } from 'tap';
import { DnsServer, type DnsMetrics, type DnsOptions, type DnsService, type DnsSource } from '../../../src/hot/discovery/dns/dns.js';

const run = promisify(execFile);

export interface FixtureService extends DnsService {
  capabilities: string[];
}

/** The services a test registers; ids match ignoring ASCII case, as DnsSource asks. */
export class FixtureSource implements DnsSource {
  services: FixtureService[] = [];
  /** calls to either method, to show a query was answered without the source */
  calls = 0;
  failing = false;
  /** answer servicesWith() at once (the registry's source when it has the list at hand), a failure thrown, not rejected */
  sync = false;

  servicesWith(capabilities: readonly string[]): readonly DnsService[] | Promise<readonly DnsService[]> {
    this.calls++;
    const list = () => {
      if (this.failing) throw new Error('source down');
      return this.services.filter((s) => capabilities.every((c) => s.capabilities.includes(c)));
    };
    return this.sync ? list() : Promise.resolve().then(list);
  }

  async serviceById(id: string): Promise<DnsService | null> {
    this.calls++;
    if (this.failing) throw new Error('source down');
    return this.services.find((s) => s.id.toLowerCase() === id.toLowerCase()) ?? null;
  }
}

export class CountingMetrics implements DnsMetrics {
  readonly answers: Record<string, number> = {};
  readonly limited = { slip: 0, drop: 0 };
  readonly drops: Record<string, number> = {};
  answered(rcode: string, transport: string): void {
    const k = `${rcode}/${transport}`;
    this.answers[k] = (this.answers[k] ?? 0) + 1;
  }
  rateLimited(action: 'slip' | 'drop'): void {
    this.limited[action]++;
  }
  dropped(reason: string): void {
    this.drops[reason] = (this.drops[reason] ?? 0) + 1;
  }
}

/** A started server on a port the kernel picked; stop it in teardown. */
/** The DNS server on port 0 (UDP and TCP) for the test `t`, stopped when `t` ends. */
export async function startDns(t: Test, o: Partial<DnsOptions> & { source: DnsSource }): Promise<DnsServer> {
  const s = new DnsServer({ port: 0, ...o });
  await s.start();
  t.teardown(() => s.stop());
  return s;
}

function root(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'scripts', 'services.sh'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('no scripts/services.sh above the test');
    dir = up;
  }
  return dir;
}

let digPath: Promise<string> | null = null;
/** dig's path; scripts/services.sh installs Debian's dnsutils when it is missing. */
export function digBinary(): Promise<string> {
  digPath ??= run('bash', [join(root(), 'scripts', 'services.sh'), 'dig']).then((r) => r.stdout.trim());
  return digPath;
}

export interface DigRecord {
  name: string;
  ttl: number;
  type: string;
  data: string;
}

export interface DigResult {
  status: string;
  flags: string[];
  opcode: string;
  edns: string | null;
  answer: DigRecord[];
  authority: DigRecord[];
  additional: DigRecord[];
  text: string;
}

/** dig's presentation output, its header and sections read back. */
export function readDig(text: string): DigResult {
  const header = /opcode: (\w+), status: (\w+)/.exec(text);
  const flags = /;; flags:([^;]*);/.exec(text)?.[1]?.trim().split(/\s+/) ?? [];
  const section = (title: string): DigRecord[] => {
    const m = new RegExp(`;; ${title} SECTION:\\n([\\s\\S]*?)(?:\\n\\n|$)`).exec(text);
    if (!m) return [];
    return m[1]!.split('\n').filter((l) => l && !l.startsWith(';')).map((l) => {
      const [name, ttl, , type, ...data] = l.split(/\s+/);
      return { name: name!, ttl: Number(ttl), type: type!, data: data.join(' ') };
    });
  };
  return {
    opcode: header?.[1] ?? '',
    status: header?.[2] ?? '',
    flags,
    edns: /; EDNS: (.*)/.exec(text)?.[1] ?? null,
    answer: section('ANSWER'),
    authority: section('AUTHORITY'),
    additional: section('ADDITIONAL'),
    text,
  };
}

/** One dig query at the server: `dig @127.0.0.1 -p PORT NAME TYPE ...options`, no retries. */
export async function dig(port: number, name: string, type: string, ...options: string[]): Promise<DigResult> {
  const bin = await digBinary();
  const args = ['@127.0.0.1', '-p', String(port), name, type, '+tries=1', '+time=5', '+norecurse', ...options];
  const r = await run(bin, args).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }));
  return readDig(r.stdout);
}

/** Send `msg` (or each of several, in order) over UDP; resolves with the first answer, or null after `waitMs` without one. */
export async function udpExchange(port: number, msg: Buffer | Buffer[], waitMs = 2000): Promise<Buffer | null> {
  const sock = createSocket('udp4');
  try {
    sock.bind(0, '127.0.0.1');
    await once(sock, 'listening');
    const got = once(sock, 'message').then(([m]) => m as Buffer);
    for (const m of Array.isArray(msg) ? msg : [msg]) sock.send(m, port, '127.0.0.1');
    let timer: NodeJS.Timeout | undefined;
    const none = new Promise<null>((r) => (timer = setTimeout(() => r(null), waitMs)));
    const out = await Promise.race([got, none]);
    clearTimeout(timer);
    return out;
  } finally {
    sock.close();
  }
}

/** Write `bytes` on one TCP connection (from 127.0.0.1, or `from`) and read the framed answers until `count` arrived or it closed. */
export async function tcpExchange(port: number, bytes: Buffer, count: number, from?: string): Promise<{ answers: Buffer[]; closed: boolean }> {
  const sock = connect({ port, host: '127.0.0.1', localAddress: from });
  sock.on('error', () => {});
  let buf = Buffer.alloc(0);
  const answers: Buffer[] = [];
  return new Promise((resolve) => {
    const done = (closed: boolean): void => {
      sock.destroy();
      resolve({ answers, closed });
    };
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        answers.push(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
      }
      if (answers.length >= count) done(false);
    });
    sock.on('close', () => done(true));
    sock.write(bytes);
  });
}

/** `msg` behind its two-byte length. */
export function framed(msg: Buffer): Buffer {
  const head = Buffer.alloc(2);
  head.writeUInt16BE(msg.length);
  return Buffer.concat([head, msg]);
}

/** A DNS message decoded, with the rcode dns-packet reads but its types leave out. */
export function decoded(b: Buffer): dnsPacket.DecodedPacket & { rcode: string } {
  return dnsPacket.decode(b) as dnsPacket.DecodedPacket & { rcode: string };
}
