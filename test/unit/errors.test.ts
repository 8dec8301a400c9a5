// The error registry: every code maps to a 4xx/5xx status, codes are unique and
// UPPER_SNAKE_CASE, every status has a reason phrase, and the body has the contract shape.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ApiError, errorBody, errorMessage, ERRORS, REGISTRY, RETIRED, STATUS_TEXT, type ErrorCode } from '../../src/hot/domain/errors.js';
import { ROOT } from '../../src/hot/paths.js';

const entries = Object.entries(ERRORS) as [ErrorCode, number][];

t.ok(entries.length > 0, 'the registry is not empty');

for (const [code, status] of entries) {
  t.test(code, async (t) => {
    t.match(code, /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/, 'upper snake case');
    t.ok(Number.isInteger(status) && status >= 400 && status <= 599, `status ${status} is 4xx/5xx`);
    t.ok(STATUS_TEXT[status], 'the status has a reason phrase');
    t.match(STATUS_TEXT[status] ?? '', new RegExp(`^${status} `));
    const e = new ApiError(code, 'msg');
    t.equal(e.status, status);
    t.same(JSON.parse(errorBody(code, 'human readable')), { error: { code, message: 'human readable' } });
  });
}

t.test('codes are unique (case-insensitively)', async (t) => {
  const lower = entries.map(([c]) => c.toLowerCase());
  t.equal(new Set(lower).size, lower.length);
});

t.test('the statuses the contract names have codes', async (t) => {
  const statuses = new Set(entries.map(([, s]) => s));
  for (const s of [400, 401, 403, 404, 413, 415, 429, 500, 503]) t.ok(statuses.has(s), String(s));
});

// The registry both ways, over the source: every registered code is raised somewhere in
// src (ApiError, reply.error or errorBody with the code as a literal), and every code
// raised so is registered. A code nobody raises is a contract promise nobody keeps.
t.test('every registered code is used in src, and every used code is registered', async (t) => {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? files(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : []));
  const src = files(join(ROOT, 'src')).filter((f) => !f.endsWith(join('domain', 'errors.ts')));
  const used = new Set<string>();
  for (const f of src) for (const m of readFileSync(f, 'utf8').matchAll(/(?:ApiError|ApiError\.of|\.error|errorBody|errorMessage)\(\s*'([A-Z][A-Z0-9_]*)'/g)) used.add(m[1]!);
  t.ok(used.size > 0, 'the scan finds raised codes');
  for (const code of Object.keys(ERRORS)) t.ok(used.has(code), `${code} is raised somewhere in src`);
  for (const code of used) t.ok(code in ERRORS, `${code} (raised in src) is registered`);
  for (const code of used) t.notOk(Object.hasOwn(RETIRED, code), `${code} (raised in src) is not a retired code`);
});

t.test('templates: one per code, filled in order; retired codes are never registered again', async (t) => {
  for (const [code, e] of Object.entries(REGISTRY)) {
    t.equal(ERRORS[code as ErrorCode], e.status, `${code}: ERRORS is the registry's status`);
    t.ok(e.message.length > 0, `${code} has a message template`);
  }
  t.equal(errorMessage('NOT_FOUND', 'service'), 'no such service');
  t.equal(errorMessage('METHOD_NOT_ALLOWED', 'PUT', 'GET, POST'), 'PUT is not allowed here; use GET, POST');
  t.equal(errorMessage('NOT_FOUND'), 'no such ?', 'a missing argument shows as "?"');
  const e = ApiError.of('NOT_FOUND', ['sandbox'], { 'X-A': '1' });
  t.match(e, { code: 'NOT_FOUND', status: 404, message: 'no such sandbox', headers: { 'X-A': '1' } });
  t.equal(new ApiError('UNAUTHORIZED').message, 'a valid key is required', 'no message: the template');
  t.equal(new ApiError('NOT_FOUND', 'own words').message, 'own words', 'a throw site may still give its own');
  for (const code of Object.keys(RETIRED)) t.notOk(code in REGISTRY, `retired ${code} is not registered`);
});
