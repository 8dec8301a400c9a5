// The command line's pure parts: argument parsing (negative numbers as values), the JSON
// Lines format (parse/serialise round trip, reasons for refused lines), the progress bar,
// and usage exits.
import { PassThrough, Readable } from 'node:stream';
import t from 'tap';
import { clock, numberOption, parseArgs, progressBar } from '../../src/admin/cli/args.js';
import { exportLine, LineError, parseLine } from '../../src/admin/cli/jsonl.js';
import { main, USAGE } from '../../src/admin/cli/main.js';
import { recordOf } from '../../src/hot/writes/bulk.js';

t.test('parseArgs', async (t) => {
  const p = parseArgs(['sandbox', 'create', 'My', 'Lab', '--lat', '-33.9', '--lon=151.2', '--json'], ['lat', 'lon', 'tier']);
  t.same(p.positionals, ['sandbox', 'create', 'My', 'Lab']);
  t.same(p.options, { lat: '-33.9', lon: '151.2' });
  t.ok(p.flags.has('json'));
  t.equal(numberOption(p, 'lat', -90, 90), -33.9);
  t.equal(numberOption(p, 'tier', 0, 1), undefined);
  t.throws(() => parseArgs(['--lat'], ['lat']), { name: 'UsageError', message: '--lat needs a value' });
  t.throws(() => parseArgs(['--json=1'], ['lat']), { name: 'UsageError', message: '--json takes no value' });
  t.same(parseArgs(['import', '-'], []).positionals, ['import', '-'], '"-" is standard input, not an option');
  t.same(parseArgs(['--', '--lat'], ['lat']).positionals, ['--lat']);
  t.throws(() => numberOption(parseArgs(['--lat', '91'], ['lat']), 'lat', -90, 90), /between -90 and 90/);
  t.throws(() => numberOption(parseArgs(['--lat', '1e3'], ['lat']), 'lat', -90, 90), /must be a number/);
});

t.test('JSON Lines: parse and export round trip', async (t) => {
  const line = JSON.stringify({
    id: 'abc123',
    endpoint: 'https://x.example.com',
    capabilities: ['Pay', 'pay', 'bill'],
    properties: { Region: 'eu' },
    deprecated: true,
    locked: false,
    sunset_date: '2030-01-02',
    iotReady: false, // derived: ignored on input
    iot: { deviceClasses: ['Meter'], protocols: ['mqtt'] },
    replacements: ['def456'],
  });
  const row = parseLine(line)!;
  t.equal(row.id, 'abc123');
  t.same(row.input.capabilities, ['pay', 'bill'], 'tokens lower-cased and de-duplicated, as the API does');
  t.same(row.input.properties, { region: 'eu' });
  t.same(row.replacements, ['def456']);
  const out = JSON.parse(exportLine(recordOf('production', row.id, row.input), row.replacements!)) as Record<string, unknown>;
  t.match(out, { id: 'abc123', iotReady: true, iot: { deviceClasses: ['meter'], protocols: ['mqtt'] }, replacements: ['def456'] });
  t.same(parseLine(JSON.stringify(out)), row, 'an exported line parses back to the same row');

  t.equal(parseLine('   '), null, 'blank lines are skipped');
  const noId = parseLine('{"endpoint":"https://y.example.com","capability":"a"}')!;
  t.match(noId.id, /^[0-9A-Za-z]{16}$/, 'a line without id gets a new one');
  t.throws(() => parseLine('{'), new LineError('not valid JSON'));
  t.throws(() => parseLine('[1]'), new LineError('not a JSON object'));
  t.throws(() => parseLine('{"id":"a b","endpoint":"https://y.example.com","capability":"a"}'), /"id" must be/);
  t.throws(() => parseLine('{"id":"a","endpoint":"https://y.example.com","capability":"a","replacements":"b"}'), /"replacements" must be/);
  t.throws(() => parseLine('{"id":"a","endpoint":"https://y.example.com"}'), { name: 'LineError' });
  t.throws(() => parseLine('{"id":"a","endpoint":"https://y.example.com","capability":"a","extra":1}'), /unknown field "extra"/);
});

t.test('usage', async (t) => {
  const out = new PassThrough();
  const err = new PassThrough();
  let e = '';
  err.on('data', (b: Buffer) => (e += b.toString()));
  const io = { stdin: Readable.from(['']), stdout: out, stderr: err, env: {} };
  t.equal(await main([], io), 2, 'no command: usage on stderr, exit 2');
  t.match(e, /usage: registry <command>/);
  t.equal(await main(['--lat'], io), 2);
  let o = '';
  out.on('data', (b: Buffer) => (o += b.toString()));
  t.equal(await main(['help'], io), 0);
  t.equal(o.trim(), USAGE);
  t.equal(await main(['stats'], { ...io, env: { PORT: 'abc' } }), 2, 'a bad configuration is exit 2');
  t.match(e, /configuration error: PORT must be an integer/);
});

t.test('progressBar: a bar with its rate on a terminal, one line per tenth otherwise', async (t) => {
  const sink = (tty: boolean) => {
    const out = new PassThrough() as PassThrough & { isTTY?: boolean };
    out.isTTY = tty;
    let text = '';
    out.on('data', (b: Buffer) => (text += b.toString()));
    return { out, text: () => text };
  };
  const term = sink(true);
  const bar = progressBar('import', 1000, term.out);
  bar.update(1000, '1000 lines, 2500/s');
  t.equal(term.text(), `\rimport [${'#'.repeat(30)}] 100% 1000/1000 1000 lines, 2500/s\x1b[K`, 'redrawn in place, the note after the bar');
  bar.done('imported');
  t.ok(term.text().endsWith('\r\x1b[Kimported\n'), 'done: the line cleared, the message');
  const file = sink(true);
  const half = progressBar('import', 4_000_000, file.out, { bytes: true });
  half.update(1_000_000, '2000 lines, 16000/s');
  t.match(file.text(), new RegExp(String.raw`^\rimport \[#{8}\.{22}\] {2}25% 1\.0/4\.0 MB 2000 lines, 16000/s ETA 0:\d\d` + '\x1b\\[K$'), 'bytes in MB, and the time left while the total is not reached');
  t.equal(clock(35), '0:35');
  t.equal(clock(3725), '1:02:05');
  const log = sink(false);
  const plain = progressBar('reindex', 100, log.out);
  for (let n = 1; n <= 100; n++) plain.update(n);
  const lines = log.text().trim().split('\n');
  t.equal(lines.length, 11, 'one line per tenth (0 % to 100 %)');
  t.match(lines[10], /^reindex 100\/100 \d+\/s$/, 'without a note: its own rate a second');
});
