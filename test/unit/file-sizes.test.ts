// File sizes outside ESLint's reach: STYLE.md asks to "split a file well before it passes
// ~300 lines", and `make lint` holds every .ts/.js/.mjs file to 300 (eslint.config.js,
// max-lines). The shell scripts, Lua scripts and SQL migrations are not linted: the same
// limit is checked here. Docs (Markdown) and generated files are not modules and are left out.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import t from 'tap';
import { ROOT } from '../../src/hot/paths.js';
import { sourceFiles } from '../helpers/source-files.js';

const MAX_LINES = 300;
const SKIP = new Set(['node_modules', 'dist', '.git', '.local', 'test-artifacts', 'coverage', '.tap', 'generated', 'bench-data', '.stryker-tmp', 'reports']);
const KINDS = /\.(sh|lua|sql)$/;

/** Lines of a text as ESLint's max-lines counts them (a final newline ends the last line). */
function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** The files of these kinds over the limit, with their line counts. */
function oversized(files: string[], read: (f: string) => string): string[] {
  return files.flatMap((f) => {
    const n = lineCount(read(f));
    return n > MAX_LINES ? [`${f}: ${n} lines`] : [];
  });
}

t.test('the rule finds a file over the limit and passes one at it', async (t) => {
  const texts: Record<string, string> = {
    'at.sh': 'x\n'.repeat(MAX_LINES),
    'over.lua': 'x\n'.repeat(MAX_LINES + 1),
    'over-no-final-newline.sql': 'x\n'.repeat(MAX_LINES) + 'x',
  };
  t.same(oversized(Object.keys(texts), (f) => texts[f]!), [`over.lua: ${MAX_LINES + 1} lines`, `over-no-final-newline.sql: ${MAX_LINES + 1} lines`]);
  t.equal(lineCount(''), 0);
  t.equal(lineCount('a'), 1);
  t.equal(lineCount('a\nb\n'), 2);
});

t.test(`every shell, Lua and SQL file is at most ${MAX_LINES} lines`, async (t) => {
  const files = sourceFiles(ROOT, KINDS, SKIP).map((f) => relative(ROOT, f)).sort();
  // the kinds are there to check: the service scripts, the Lua scripts, the migrations
  t.ok(files.some((f) => f.startsWith('scripts/') && f.endsWith('.sh')), 'shell scripts found');
  t.ok(files.some((f) => f.startsWith('redis/') && f.endsWith('.lua')), 'Lua scripts found');
  t.ok(files.some((f) => f.endsWith('.sql')), 'SQL files found');
  t.same(oversized(files, (f) => readFileSync(`${ROOT}/${f}`, 'utf8')), [], `over ${MAX_LINES} lines (split them, as STYLE.md asks)`);
});
