// Writes N production services as JSON Lines for the CLI import bench (bench/README.md,
// "Import and export"): node dist/bench/import-data.js 100000 [--bench] > /tmp/services.jsonl
// Deterministic (seeded); each line has an id, so re-importing the file is a no-op, and
// one service in 50 names the two services before it as replacement candidates. `--bench`:
// the services of the bench's data set (bench/dataset.ts: Zipf capabilities, 5 properties,
// 20 % IoT) with 16-character ids like the registry's; without it the demo seed's shape.
import { demoService, prng } from '../src/admin/seed.js';
import { randomBase62 } from '../src/hot/domain/tokens.js';
import { serviceObject } from '../src/hot/domain/service.js';
import type { ServiceInput } from '../src/hot/domain/validation.js';
import { serviceGenerator, sizedSpec } from './dataset.js';

const n = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 100_000);
const benchShape = process.argv.includes('--bench');
const r = prng(7);
const next = serviceGenerator(sizedSpec(n));
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const seededId = () => {
  let s = '';
  for (let i = 0; i < 16; i++) s += ALPHABET[Math.floor(r() * 62)];
  return s;
};
const benchService = (i: number): ServiceInput => {
  const g = next(`svc-${i}`);
  return { endpoint: g.endpoint, capabilities: g.capabilities, properties: Object.fromEntries(g.properties), iot: g.iot, deprecated: false, locked: false, sunsetDate: null };
};
const ids: string[] = [];
let buf = '';
for (let i = 0; i < n; i++) {
  const id = benchShape ? seededId() : 'imp' + String(i).padStart(7, '0') + randomBase62(6);
  const s = benchShape ? benchService(i) : demoService(r, i);
  const repl = i % 50 === 49 ? ids.slice(-2) : [];
  const obj = serviceObject({ id, ns: 'production', seq: 0, ...s, deprecatedAt: null, replacementSeqs: [] });
  buf += JSON.stringify({ ...obj, replacements: repl }) + '\n';
  ids.push(id);
  if (ids.length > 2) ids.shift();
  if (buf.length > 1 << 20) {
    if (!process.stdout.write(buf)) await new Promise((res) => process.stdout.once('drain', res));
    buf = '';
  }
}
process.stdout.write(buf);
