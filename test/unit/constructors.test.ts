// Constructors open nothing (docs/decisions/composition-root.md): no class in src starts a
// timer, a connection, a subscription, a thread or a listener while it is constructed — in
// its constructor or in a field initialiser; its start() does. A static rule over every
// class of src (what runs inside a callback defined there is not construction and is not
// looked at), and the same rule shown to find planted openings. The runtime side, for the
// parts of a serving thread: test/http/compose-start.test.ts.
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import ts from 'typescript';
import { ROOT } from '../../src/hot/paths.js';
import { sourceFiles } from '../helpers/source-files.js';

/** calls that open something: timers, connections, subscriptions, listeners */
const OPENING_CALLS = new Set(['setInterval', 'setTimeout', 'setImmediate', 'connect', 'subscribe', 'psubscribe', 'duplicate', 'listen', 'start']);
/** classes whose construction opens something: a thread, a connection */
const OPENING_CLASSES = new Set(['Piscina', 'Worker', 'Redis', 'Cluster', 'Socket', 'WebSocket', 'EventSource']);

/** What each constructor or field initialiser of `text`'s classes opens, as "Class: what". */
function openings(text: string, file = 'x.ts'): string[] {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const scan = (cls: string, n: ts.Node): void => {
    // a function defined here runs later (a callback), not while constructing
    if (ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isClassLike(n)) return;
    if (ts.isCallExpression(n)) {
      const e = n.expression;
      const name = ts.isIdentifier(e) ? e.text : ts.isPropertyAccessExpression(e) ? e.name.text : '';
      if (OPENING_CALLS.has(name)) found.push(`${cls}: ${name}()`);
    }
    if (ts.isNewExpression(n)) {
      const e = n.expression;
      const name = ts.isIdentifier(e) ? e.text : ts.isPropertyAccessExpression(e) ? e.name.text : '';
      if (OPENING_CLASSES.has(name)) found.push(`${cls}: new ${name}`);
    }
    ts.forEachChild(n, (c) => scan(cls, c));
  };
  const visit = (n: ts.Node): void => {
    if (ts.isClassLike(n)) {
      const cls = n.name?.text ?? '(anonymous class)';
      for (const m of n.members) {
        if (ts.isConstructorDeclaration(m) && m.body) ts.forEachChild(m.body, (c) => scan(cls, c));
        else if (ts.isPropertyDeclaration(m) && m.initializer && !m.modifiers?.some((x) => x.kind === ts.SyntaxKind.StaticKeyword)) scan(cls, m.initializer);
        // constructor parameters' defaults run while constructing too
        if (ts.isConstructorDeclaration(m)) for (const p of m.parameters) if (p.initializer) scan(cls, p.initializer);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return found;
}

const sources = (dir: string): string[] => sourceFiles(dir, /(?<!\.d)\.ts$/);

t.test('no class of src opens anything while it is constructed', async (t) => {
  const files = sources(join(ROOT, 'src'));
  let classes = 0;
  const bad: string[] = [];
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    classes += (text.match(/\bclass\s+\w+/g) ?? []).length;
    for (const o of openings(text, f)) bad.push(`${relative(ROOT, f)}: ${o}`);
  }
  t.ok(classes > 20, `the classes of src were read (${classes} in ${files.length} files)`);
  t.strictSame(bad, [], 'open in start(), not in a constructor or a field initialiser');
});

t.test('the rule finds planted openings, and leaves callbacks and start() alone', async (t) => {
  t.strictSame(
    openings(`
      class A { constructor(private r: R) { r.connect(); } }
      class B { private t = setInterval(() => 0, 10); }
      class C { constructor() { this.p = new Piscina({}); } }
      class D { constructor(r: R) { this.sub = r.duplicate(); this.sub.subscribe('c'); } }
      class E { constructor(private w = new Worker('x')) {} }
    `),
    ['A: connect()', 'B: setInterval()', 'C: new Piscina', 'D: duplicate()', 'D: subscribe()', 'E: new Worker'],
  );
  t.strictSame(
    openings(`
      class F {
        private stop = () => clearInterval(this.t);
        constructor(private r: R) { this.go = () => r.connect(); }
        start() { this.t = setInterval(() => 0, 10); this.r.subscribe('c'); }
      }
    `),
    [],
  );
});
