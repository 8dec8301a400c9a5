// References into the docs resolve: a comment or a doc that says `decisions.md, "X"` or
// `bench/README.md, "X"` names a heading (or a bold lead-in) of that file that exists, and a
// link to `decisions.md#a`, `bench/README.md#a` or `#a` inside the main docs names a heading's
// anchor. The docs are rewritten as reference (STYLE.md: "docs are reference, history is
// git"), and a renamed section must fail here, not leave a comment pointing at nothing.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { ROOT } from '../../src/hot/paths.js';
import { sourceFiles } from '../helpers/source-files.js';

const SKIP = new Set(['node_modules', 'dist', '.git', '.local', 'test-artifacts', 'coverage', '.tap']);
const EXT = /\.(ts|mts|js|mjs|lua|sh|md|sql)$/;
const TARGETS: Record<string, string> = { 'decisions.md': 'docs/decisions.md', 'bench/README.md': 'bench/README.md' };


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

/** Every `decisions.md, "X"` / `bench/README.md, "X"` in `text`, line breaks and comment leaders folded. */
function quoted(text: string): { target: string; name: string }[] {
  const flat = text.replace(/\r?\n[ \t]*(?:\/\/|--|\*|#)?[ \t]*/g, ' ');
  const out: { target: string; name: string }[] = [];
  for (const m of flat.matchAll(/(decisions\.md|bench\/README\.md)`?\]?(?:\([^)]*\))?,?[ \t]*(?:section |under )?"([^"]{2,100})"/g)) {
    out.push({ target: m[1]!, name: m[2]! });
  }
  return out;
}

/** Every markdown link to an anchor of a target doc, or (inside `self`) to one of its own. */
function linked(text: string, self: string | null): { target: string; anchor: string }[] {
  const out: { target: string; anchor: string }[] = [];
  for (const m of text.matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)) {
    const path = m[1]!;
    const target = path === '' ? self : path.endsWith('decisions.md') ? 'decisions.md' : path.endsWith('bench/README.md') || (self === 'bench/README.md' && path === 'README.md') ? 'bench/README.md' : null;
    if (target) out.push({ target, anchor: m[2]! });
  }
  return out;
}

const docs: Record<string, Doc> = {};
for (const [k, p] of Object.entries(TARGETS)) docs[k] = readDoc(readFileSync(join(ROOT, p), 'utf8'));

t.test('the rule finds what it is meant to find', async (t) => {
  const d = readDoc('# Top\n\n## Rate limits\n\nText **Sandbox key maps in bytes.** more\n```\n# not a heading\n```\n');
  t.ok(resolves(d, 'Rate limits'), 'a heading');
  t.ok(resolves(d, 'rate  LIMITS'), 'case and spaces do not matter');
  t.ok(resolves(d, 'Sandbox key maps'), 'a bold lead-in, by its start');
  t.notOk(resolves(d, 'not a heading'), 'a fenced line is no heading');
  t.notOk(resolves(d, 'Heartbeat row, tenth round'), 'a section that is gone');
  t.same(quoted('// see docs/decisions.md,\n// "Rate limits" and bench/README.md "Memory"'), [
    { target: 'decisions.md', name: 'Rate limits' },
    { target: 'bench/README.md', name: 'Memory' },
  ]);
  t.same(linked('[a](docs/decisions.md#rate-limits) [b](#x) [c](https://e.org/#y)', 'decisions.md'), [
    { target: 'decisions.md', anchor: 'rate-limits' },
    { target: 'decisions.md', anchor: 'x' },
  ]);
  t.equal(slug('Appendix: the last full `make bench` report'), 'appendix-the-last-full-make-bench-report');
  t.equal(slug("Today's results"), 'todays-results');
});

t.test('every quoted section and every anchor link into the docs resolves', async (t) => {
  const bad: string[] = [];
  let seen = 0;
  for (const f of sourceFiles(ROOT, EXT, SKIP)) {
    const rel = relative(ROOT, f);
    const text = readFileSync(f, 'utf8');
    if (rel === 'test/unit/doc-references.test.ts') continue; // its own planted examples
    for (const q of quoted(text)) {
      seen++;
      if (!resolves(docs[q.target]!, q.name)) bad.push(`${rel}: ${q.target}, "${q.name}"`);
    }
    if (!rel.endsWith('.md')) continue;
    const self = rel === 'docs/decisions.md' ? 'decisions.md' : rel === 'bench/README.md' ? 'bench/README.md' : null;
    for (const l of linked(text, self)) {
      seen++;
      if (!docs[l.target]!.anchors.has(l.anchor)) bad.push(`${rel}: ${l.target}#${l.anchor}`);
    }
  }
  t.ok(seen > 50, `references found (${seen})`);
  t.same(bad, [], 'references that name no heading');
});
