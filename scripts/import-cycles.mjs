// Import cycles among the TypeScript sources (type-only imports included: a type cycle is
// still two modules that cannot be read apart). `make lint` runs it over src/, bench/ and
// test/ as one graph; it prints each cycle and exits 1 when there is one. test/unit/import-cycles.test.ts checks that it
// finds a planted cycle. (Why a script and not import/no-cycle: docs/decisions/rooms.md.)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const IMPORT_RE = /^\s*(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|^\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/gm;

function tsFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The relative imports of each .ts file under `root` (resolved to .ts paths). */
export function importGraph(root) {
  const graph = new Map();
  for (const f of tsFiles(root)) {
    const deps = [];
    for (const m of readFileSync(f, 'utf8').matchAll(IMPORT_RE)) {
      deps.push(resolve(dirname(f), (m[1] ?? m[2]).replace(/\.js$/, '.ts')));
    }
    graph.set(resolve(f), deps);
  }
  return graph;
}

/** Every strongly connected component of more than one module (or a self-import): Tarjan. */
export function cycles(graph) {
  let i = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const found = [];
  const visit = (v) => {
    index.set(v, i);
    low.set(v, i++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) === index.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // one graph over every folder named (default src/): a cycle through two of them is found too
  const roots = (process.argv.length > 2 ? process.argv.slice(2) : ['src']).map((r) => resolve(r));
  const graph = new Map(roots.flatMap((r) => [...importGraph(r)]));
  const found = cycles(graph);
  for (const c of found) console.error(`import cycle: ${c.map((f) => relative(process.cwd(), f)).join(' <-> ')}`);
  if (found.length) process.exit(1);
  console.log(`import-cycles: no cycle among the modules of ${roots.map((r) => relative(process.cwd(), r) || '.').join(', ')}`);
}
