// Writes N production services as JSON Lines for the CLI import bench (bench/README.md,
// "Import and export"): node dist/bench/import-data.js 100000 > /tmp/services.jsonl
// Deterministic (seeded); each line has an id, so re-importing the file is a no-op, and
// one service in 50 names the two services before it as replacement candidates.
import { demoService, prng } from '../src/admin/seed.js';
import { randomBase62 } from '../src/hot/domain/tokens.js';
import { serviceObject } from '../src/hot/domain/service.js';

const n = Number(process.argv[2] ?? 100_000);
const r = prng(7);
const ids: string[] = [];
let buf = '';
for (let i = 0; i < n; i++) {
  const id = 'imp' + String(i).padStart(7, '0') + randomBase62(6);
  const s = demoService(r, i);
  const repl = i % 50 === 49 ? ids.slice(-2) : [];
  const obj = serviceObject({ id, ns: 'production', seq: 0, ...s, deprecatedAt: null, replacementSeqs: [] });
  buf += JSON.stringify({ ...obj, replacements: repl }) + '\n';
  ids.push(id);
  if (buf.length > 1 << 20) {
    process.stdout.write(buf);
    buf = '';
  }
}
process.stdout.write(buf);
