// Micro-benchmark of what the table of search dimensions put on the hot path: the set
// suffixes of a search (filterSuffixes, on every uncached page) and of a write (memberSuffixes,
// once per write), each against the hand-written version it replaced (copied below as it
// was at 8bbd7e3), alternated in one process: `node dist/bench/dimensions-micro.js [rounds]`.
import { filterSuffixes } from '../src/hot/domain/dimensions.js';
import { memberSuffixes } from '../src/hot/domain/keys.js';
import type { ServiceRecord } from '../src/hot/domain/service.js';

type F = { capabilities: string[]; properties: { key: string; value: string }[]; deviceClass?: string | null; protocol?: string | null; iotReady?: boolean };

function oldFilterSuffixes(f: F): string[] {
  const sets: string[] = [];
  for (const c of f.capabilities) sets.push('c:' + c);
  for (const p of f.properties) sets.push('p:' + p.key + ':' + p.value);
  if (f.deviceClass) sets.push('d:' + f.deviceClass);
  if (f.protocol) sets.push('r:' + f.protocol);
  if (f.iotReady && !f.deviceClass && !f.protocol) sets.push('iot');
  if (!sets.length) sets.push('all');
  return sets;
}

function oldMemberSuffixes(s: ServiceRecord): string[] {
  const out = ['all'];
  for (const c of s.capabilities) out.push('c:' + c);
  for (const [k, v] of Object.entries(s.properties)) out.push('p:' + k + ':' + v);
  if (s.iot) {
    out.push('iot');
    for (const d of s.iot.deviceClasses) out.push('d:' + d);
    for (const p of s.iot.protocols) out.push('r:' + p);
  }
  return out;
}

const filters: F[] = [
  { capabilities: ['payments'], properties: [], deviceClass: null, protocol: null, iotReady: false },
  { capabilities: ['a', 'b', 'c'], properties: [], deviceClass: null, protocol: null, iotReady: true },
  { capabilities: [], properties: [{ key: 'zone', value: 'eu' }], deviceClass: 'sensor', protocol: 'mqtt', iotReady: true },
];
const record: ServiceRecord = {
  id: 'x', ns: 'production', seq: 1, endpoint: 'https://x.example.com/', capabilities: ['a', 'b', 'c'], properties: { zone: 'eu', tier: 'gold' },
  iot: { deviceClasses: ['sensor', 'meter'], protocols: ['mqtt'] }, deprecated: false, deprecatedAt: null, locked: false, sunsetDate: null, replacementSeqs: [],
};

function time(n: number, f: () => unknown): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  return Number(process.hrtime.bigint() - t0) / n;
}

const rounds = Number(process.argv[2] ?? 7);
const N = 300_000;
let sink = 0;
const res: Record<string, number[]> = { 'filterSuffixes old': [], 'filterSuffixes table': [], 'memberSuffixes old': [], 'memberSuffixes table': [] };
for (let r = 0; r < rounds; r++) {
  let i = 0;
  res['filterSuffixes old']!.push(time(N, () => (sink += oldFilterSuffixes(filters[i++ % 3]!).length)));
  res['filterSuffixes table']!.push(time(N, () => (sink += filterSuffixes(filters[i++ % 3]!).length)));
  res['memberSuffixes old']!.push(time(N / 10, () => (sink += oldMemberSuffixes(record).length)));
  res['memberSuffixes table']!.push(time(N / 10, () => (sink += memberSuffixes(record).length)));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [k, xs] of Object.entries(res)) console.log(`${k.padEnd(22)} median ${median(xs).toFixed(0)} ns/call (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)}; ${rounds} rounds)`);
if (sink < 0) console.log(sink);
