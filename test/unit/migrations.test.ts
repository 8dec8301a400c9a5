// Migration files: one number each (the ledger is keyed by number, so a second file with a
// number already applied would be skipped silently), and the check that refuses a duplicate.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { migrationFiles } from '../../src/hot/pg/migrator.js';

t.test('the shipped migrations have one number each, in order', async (t) => {
  const files = await migrationFiles();
  t.ok(files.length >= 4);
  const numbers = files.map((f) => Number(f.slice(0, 4)));
  t.same(numbers, [...new Set(numbers)].sort((a, b) => a - b));
});

t.test('two files with one number are refused before anything runs', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  await writeFile(join(dir, '0001_a.sql'), 'SELECT 1;');
  await writeFile(join(dir, '0002_b.sql'), 'SELECT 1;');
  t.same(await migrationFiles(dir), ['0001_a.sql', '0002_b.sql']);
  await writeFile(join(dir, '0002_c.sql'), 'SELECT 1;');
  await t.rejects(migrationFiles(dir), /0002_b\.sql and 0002_c\.sql share the number 0002/);
});
