// The import graph of src has no cycle (type-only imports included), and the checker that
// `make lint` runs (scripts/import-cycles.mjs) does find one when there is.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { ROOT } from '../../src/hot/paths.js';

type Graph = Map<string, string[]>;
const checker = (await import(pathToFileURL(join(ROOT, 'scripts', 'import-cycles.mjs')).href)) as {
  importGraph(root: string): Graph;
  cycles(g: Graph): string[][];
};

t.test('src has no import cycle', async (t) => {
  const g = checker.importGraph(join(ROOT, 'src'));
  t.ok(g.size > 50, `the graph holds the modules of src (${g.size})`);
  t.strictSame(checker.cycles(g), []);
});

t.test('a planted type-only cycle is found', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cycles-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.js';\nexport interface A { b: B }\n");
  writeFileSync(join(dir, 'b.ts'), "import type {\n  A,\n} from './a.js';\nexport interface B { a: A }\n");
  writeFileSync(join(dir, 'c.ts'), "import type { A } from './a.js';\nexport type C = A;\n");
  const found = checker.cycles(checker.importGraph(dir));
  t.equal(found.length, 1, 'one cycle');
  t.strictSame(found[0], [join(dir, 'a.ts'), join(dir, 'b.ts')], 'a <-> b, not c');
});
