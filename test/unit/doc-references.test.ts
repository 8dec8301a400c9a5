// References into the docs resolve: a comment or a doc that names a decision
// (`docs/decisions/<topic>.md`) names a file that exists; one that says
// `bench/README.md, "X"` names a heading (or a bold lead-in) of that file; a markdown link to
// `bench/README.md#a` or `#a` inside it names a heading's anchor; and a relative link in a
// Markdown file names a file that exists. The docs are reference (STYLE.md: "docs are
// reference, history is git"), and a renamed section or file must fail here, not leave a
// comment pointing at nothing.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import t from 'tap';
import { ROOT } from '../../src/hot/paths.js';
import { sourceFiles } from '../helpers/source-files.js';

const SKIP = new Set(['node_modules', 'dist', '.git', '.local', 'test-artifacts', 'coverage', '.tap', 'reports', '.stryker-tmp']);
const EXT = /\.(ts|mts|js|mjs|lua|sh|md|sql)$/;
const BENCH = 'bench/README.md';

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

interface Doc { names: string[]; anchors: Set<string> }

/** A doc's headings and bold lead-ins (what a quoted reference may name) and its anchors. */
function readDoc(text: string): Doc {
  const names: string[] = [];
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const h = /^#{1,6}\s+(.*)$/.exec(line);
    if (h) {
      names.push(h[1]!.replace(/`/g, '').toLowerCase());
      anchors.add(slug(h[1]!));
    }
    for (const b of line.matchAll(/\*\*([^*]+)\*\*/g)) names.push(b[1]!.replace(/`/g, '').toLowerCase());
  }
  return { names, anchors };
}

/** Does `name` (as quoted) start a heading or bold lead-in of `doc`? */
function resolves(doc: Doc, name: string): boolean {
  const n = name.replace(/`/g, '').replace(/\s+/g, ' ').trim().toLowerCase();
  return doc.names.some((h) => h.replace(/\s+/g, ' ').startsWith(n));
}

/** Every `bench/README.md, "X"` in `text`, line breaks and comment leaders folded. */
function quoted(text: string): string[] {
  const flat = text.replace(/\r?\n[ \t]*(?:\/\/|--|\*|#)?[ \t]*/g, ' ');
  return [...flat.matchAll(/bench\/README\.md`?\]?(?:\([^)]*\))?,?[ \t]*(?:section |under )?"([^"]{2,100})"/g)].map((m) => m[1]!);
}

/** Every decision a text names: `decisions/<topic>.md`, as a path or a relative link. */
function decisions(text: string): string[] {
  return [...text.matchAll(/decisions\/([a-z0-9-]+)\.md/g)].map((m) => m[1]!);
}

/** Every markdown link in `text`: its path (relative, no scheme) and its anchor. */
function links(text: string): { path: string; anchor: string | null }[] {
  const out: { path: string; anchor: string | null }[] = [];
  for (const m of text.matchAll(/\]\(([^)\s]*)\)/g)) {
    if (/^[a-z]+:/i.test(m[1]!)) continue;
    const [path, anchor] = m[1]!.split('#') as [string, string | undefined];
    out.push({ path, anchor: anchor ?? null });
  }
  return out;
}

const bench = readDoc(readFileSync(join(ROOT, BENCH), 'utf8'));
const docs = new Map<string, Doc>();
const anchorsOf = (rel: string): Set<string> => {
  if (!docs.has(rel)) docs.set(rel, readDoc(readFileSync(join(ROOT, rel), 'utf8')));
  return docs.get(rel)!.anchors;
};

t.test('the rule finds what it is meant to find', async (t) => {
  const d = readDoc('# Top\n\n## Rate limits\n\nText **Sandbox key maps in bytes.** more\n```\n# not a heading\n```\n');
  t.ok(resolves(d, 'Rate limits'), 'a heading');
  t.ok(resolves(d, 'rate  LIMITS'), 'case and spaces do not matter');
  t.ok(resolves(d, 'Sandbox key maps'), 'a bold lead-in, by its start');
  t.notOk(resolves(d, 'not a heading'), 'a fenced line is no heading');
  t.notOk(resolves(d, 'Heartbeat row, tenth round'), 'a section that is gone');
  t.same(quoted('// see bench/README.md,\n// "Memory" and bench/README.md "Rebuild"'), ['Memory', 'Rebuild']);
  t.same(decisions('// docs/decisions/near-cache.md and [x](decisions/rebuild.md)'), ['near-cache', 'rebuild']);
  t.same(links('[a](../bench/README.md#rebuild) [b](#x) [c](https://e.org/#y) [d](decisions/rebuild.md)'), [
    { path: '../bench/README.md', anchor: 'rebuild' },
    { path: '', anchor: 'x' },
    { path: 'decisions/rebuild.md', anchor: null },
  ]);
  t.equal(slug('Appendix: the last full `make bench` report'), 'appendix-the-last-full-make-bench-report');
  t.equal(slug("Today's results"), 'todays-results');
});

t.test('every named decision, quoted section, link and anchor resolves', async (t) => {
  const bad: string[] = [];
  let seen = 0;
  for (const f of sourceFiles(ROOT, EXT, SKIP)) {
    const rel = relative(ROOT, f);
    if (rel === 'test/unit/doc-references.test.ts') continue; // its own planted examples
    const text = readFileSync(f, 'utf8');
    if (/decisions\.md/.test(text)) bad.push(`${rel}: names docs/decisions.md, which is now docs/decisions/<topic>.md`);
    for (const d of decisions(text)) {
      seen++;
      if (!existsSync(join(ROOT, 'docs', 'decisions', `${d}.md`))) bad.push(`${rel}: decisions/${d}.md`);
    }
    for (const q of quoted(text)) {
      seen++;
      if (!resolves(bench, q)) bad.push(`${rel}: ${BENCH}, "${q}"`);
    }
    if (!rel.endsWith('.md')) continue;
    for (const l of links(text)) {
      const target = l.path === '' ? rel : relative(ROOT, join(dirname(f), l.path));
      if (target.startsWith('..')) continue; // outside the repository (the shared contract)
      seen++;
      if (!existsSync(join(ROOT, target))) bad.push(`${rel}: link to ${l.path}`);
      else if (l.anchor && target.endsWith('.md') && !anchorsOf(target).has(l.anchor)) bad.push(`${rel}: ${target}#${l.anchor}`);
    }
  }
  t.ok(seen > 50, `references found (${seen})`);
  t.same(bad, [], 'references that name nothing');
});
