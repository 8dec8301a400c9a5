// The bench's pure helpers: flags, percentiles, the README block.
import t from 'tap';
import { percentile } from '../../bench/cannon.js';
import { parseFlags } from '../../bench/flags.js';
import { costNote, END, replaceBlock, scenarioTable, START, visibilityTable, type Row } from '../../bench/report.js';

t.test('flags: defaults of full and quick runs, lists, bad input', async (t) => {
  const full = parseFlags([], 2);
  t.strictSame(full.workers, [1, 2], 'full runs compare 1 vs N');
  t.equal(full.durationS, 10);
  t.equal(full.readme, true);
  const quick = parseFlags(['--quick'], 2);
  t.strictSame(quick.workers, [1]);
  t.equal(quick.ceilingRuns, 1, 'quick runs measure the ceiling once');
  t.equal(full.ceilingRuns, 2, 'full runs bracket the scenarios with two ceiling runs');
  t.equal(quick.durationS, 3);
  t.equal(quick.readme, false, 'a quick run leaves the README table alone');
  const f = parseFlags(['--workers', '1,4', '--scenarios', 'a1,h', '--pinned', '--no-readme'], 2);
  t.strictSame(f.workers, [1, 4]);
  t.strictSame([...f.only!], ['a1', 'h']);
  t.equal(f.readme, false);
  t.strictSame(f.argv, ['--workers', '1,4', '--scenarios', 'a1,h', '--no-readme'], '--pinned is internal');
  t.throws(() => parseFlags(['--workers', '0'], 2), /positive integer/);
  t.throws(() => parseFlags(['--fast'], 2), /unknown argument --fast/);
  t.equal(full.services, null, 'no named size: the full data set');
  t.equal(parseFlags(['--services', '1000000'], 2).services, 1_000_000);
  t.throws(() => parseFlags(['--services', '0'], 2), /positive integer/);
  t.throws(() => parseFlags(['--quick', '--services', '5000'], 2), /exclude each other/);
});

t.test('percentile is nearest-rank', async (t) => {
  const s = Float64Array.from({ length: 100 }, (_, i) => i + 1);
  t.equal(percentile(s, 50), 50);
  t.equal(percentile(s, 99), 99);
  t.equal(percentile(s, 100), 100);
  t.equal(percentile(Float64Array.of(3), 99), 3);
  t.ok(Number.isNaN(percentile(new Float64Array(0), 50)));
});

t.test('the README block is replaced between the markers, and only there', async (t) => {
  const text = `# Bench\n\nintro\n\n${START}\nold table\n${END}\n\n## Caveats\n\nkeep me\n`;
  const out = replaceBlock(text, 'new table\n');
  t.equal(out, `# Bench\n\nintro\n\n${START}\nnew table\n${END}\n\n## Caveats\n\nkeep me\n`);
  t.equal(replaceBlock(out, 'newer'), out.replace('new table', 'newer'), 'idempotent shape');
  const appended = replaceBlock('# Bench\n', 'x');
  t.match(appended, new RegExp(`## Results\\n\\n${START}\\nx\\n${END}\\n$`), 'markers added when missing');
});

t.test('the table flags non-2xx answers and a saturated load generator', async (t) => {
  const row = (over: Partial<Row>): Row => ({
    id: 'a1', title: 'search', path: '/services', ratio: 0.5, loadgenSaturated: false, bodyBytes: 10,
    rps: 1000, totalRps: 1000, p50: 1.234, p90: 2, p99: 3.456, max: 9, mean: 1.5, responses: 10, ok: 10, non2xx: 0,
    statusCodes: { 200: 10 }, errors: 0, timeouts: 0, durationS: 1, bytesPerSec: 1, loadgenCpuPct: 50,
    serverCpuPct: 99.6, otherCpuPct: null, stealPct: null, serverUsPerReq: 40, ...over,
  });
  const ceiling = row({ id: 'g', ratio: 1, loadgenCpuPct: 97, loadgenSaturated: true });
  const table = scenarioTable({
    workers: 1,
    pinning: 'x',
    rows: [row({}), row({ id: 'f', non2xx: 3, statusCodes: { 200: 7, 429: 3 } })],
    ceiling,
    ceilings: [row({ id: 'g0', title: 'CEILING before', ratio: 0.9 }), ceiling],
  });
  t.match(table, /\| a1 \| search \| 1,000 \| 1\.23 \| 3\.46 \| 0 \| 0\.50× \| 50 % \| 100 % \| 40\.0 \| – \|/);
  t.match(table, /\| f \| .* \| 3 × 429 \|/);
  t.match(table, /\| g \| .*\| \*\*97 % saturated\*\* \| 100 % \|/);
  t.match(table, /\| g0 \| CEILING before \| .* \| 0\.90× \|/, 'every ceiling run is listed');
  const run = { workers: 1, pinning: 'x', rows: [row({})], ceiling: row({ id: 'g', loadgenSaturated: true, serverUsPerReq: 30 }), ceilings: [] };
  t.match(costNote(run, ['a1', 'f']) ?? '', /ceiling 30\.0 µs, a1 40\.0 µs \(cost ratio 0\.75×\);/, 'cost ratio when the ceiling saturated autocannon');
  t.equal(costNote({ ...run, ceiling: row({ id: 'g', serverUsPerReq: 30 }) }, ['a1']), null, 'no cost note when req/s ratios hold');
});

t.test('the visibility table says how many writes showed up within 100 ms', async (t) => {
  const md = visibilityTable({ rounds: 4, delaysMs: [2, 3, 5, 140], p50: 3, p99: 140, max: 140, within100: 3, missed: 1 });
  t.match(md, /\| 4 \| 3\.00 \| 140\.00 \| 140\.00 \| 3 of 4 \| 1 \|/);
});
