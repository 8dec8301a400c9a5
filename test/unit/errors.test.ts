// The error registry (src/hot/domain/errors.ts): public codes with their statuses, every
// error the server raises by key with its code and message template, retired ones, and the
// error body. Both directions over the source: every key raised in src is registered and
// every registered key is raised; every public code is answered in some test or retired.
import { STATUS_CODES } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ApiError, errorBodiesHeld, errorBody, errorBodyOf, errorMessage, ERRORS, REGISTRY, RETIRED, STATUS_TEXT, type ErrorCode, type ErrorKey } from '../../src/hot/domain/errors.js';
import { ROOT } from '../../src/hot/paths.js';
import { sourceFiles } from '../helpers/source-files.js';

const codes = Object.entries(ERRORS) as [ErrorCode, number][];
const keys = Object.keys(REGISTRY) as ErrorKey[];
const SNAKE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;

const files = (dir: string): string[] => sourceFiles(dir, /\.ts$/);

t.test('public codes: upper snake case, unique, a 4xx/5xx status with its standard reason phrase', async (t) => {
  t.ok(codes.length > 0);
  for (const [code, status] of codes) {
    t.match(code, SNAKE, code);
    t.ok(Number.isInteger(status) && status >= 400 && status <= 599, `${code}: ${status} is 4xx/5xx`);
    t.equal(STATUS_TEXT[status], `${status} ${STATUS_CODES[status]}`, `${code}: status line of ${status}`);
  }
  const lower = codes.map(([c]) => c.toLowerCase());
  t.equal(new Set(lower).size, lower.length, 'unique case-insensitively');
  for (const s of [400, 401, 403, 404, 413, 415, 429, 500, 503]) t.ok(codes.some(([, x]) => x === s), `the contract's ${s} has a code`);
});

t.test('every status line the server writes is the standard one (node:http STATUS_CODES)', async (t) => {
  t.ok(Object.keys(STATUS_TEXT).length >= 18);
  for (const [s, line] of Object.entries(STATUS_TEXT)) t.equal(line, `${s} ${STATUS_CODES[s]}`, s);
  for (const s of [200, 201, 204, 302, 304, 431]) t.ok(STATUS_TEXT[s], `${s} (success, redirect and uWS statuses) has a line`);
});

t.test('every key: upper snake case, a registered code, a template; an ApiError of it has both', async (t) => {
  for (const key of keys) {
    const { code, message } = REGISTRY[key];
    t.match(key, SNAKE, key);
    t.ok(code in ERRORS, `${key}: ${code} is a public code`);
    t.ok(message.length > 0, `${key} has a message template`);
    const e = new ApiError(key);
    t.match(e, { key, code, status: ERRORS[code], headers: {} }, key);
    t.equal(e.message, message.includes('%s') ? message.replace(/%s/g, '?') : message, `${key}: no arguments, the template ("?" for each %s)`);
    t.notOk(Object.hasOwn(RETIRED, key), `${key} is not retired`);
  }
  for (const code of Object.keys(RETIRED)) t.notOk(code in REGISTRY || code in ERRORS, `retired ${code} is not registered again`);
});

t.test('templates are filled in order; the error body has the contract shape', async (t) => {
  t.equal(errorMessage('SERVICE_NOT_FOUND'), 'no such service');
  t.equal(errorMessage('SERVICE_NOT_FOUND', ['x']), 'no such service', 'a template without %s ignores arguments');
  t.equal(errorMessage('METHOD_NOT_ALLOWED', ['PUT', 'GET, POST']), 'PUT is not allowed here; use GET, POST');
  t.equal(errorMessage('BATCH_SIZE', [1000, 1001]), '/services must hold 1 to 1000 registrations, got 1001');
  t.equal(errorMessage('BATCH_SIZE', [1000]), '/services must hold 1 to 1000 registrations, got ?', 'a missing argument shows as "?"');
  t.equal(errorMessage('BATCH_SIZE'), '/services must hold 1 to ? registrations, got ?', 'no arguments at all: "?" for each');
  t.equal(errorBodyOf('BATCH_SIZE'), '{"error":{"code":"VALIDATION_FAILED","message":"/services must hold 1 to ? registrations, got ?"}}');
  t.equal(errorMessage('QUERY_INVALID', ['a %s in the text']), 'a %s in the text', 'an argument is not read as a template');
  const e = new ApiError('SANDBOX_NOT_FOUND', [], { 'X-A': '1' });
  t.match(e, { code: 'NOT_FOUND', status: 404, message: 'no such sandbox', headers: { 'X-A': '1' } });
  t.same(JSON.parse(errorBody('NOT_FOUND', 'human readable')), { error: { code: 'NOT_FOUND', message: 'human readable' } });
  t.same(JSON.parse(errorBodyOf('URL_TOO_LONG', [8192])), { error: { code: 'URI_TOO_LONG', message: 'the URL is longer than 8192 bytes' } });
  t.same(JSON.parse(errorBodyOf('INTERNAL')), { error: { code: 'INTERNAL', message: 'internal error' } });
});

t.test('at(): the error about one part of a batch, prefixed by its path', async (t) => {
  const h = { 'X-B': '2' };
  const cases: [ApiError, string][] = [
    [new ApiError('BODY_INVALID', ['/endpoint is not an absolute URL'], h), '/services/3/endpoint is not an absolute URL'],
    [new ApiError('BODY_INVALID', ['(body) must have required property "endpoint"'], h), '/services/3 must have required property "endpoint"'],
    [new ApiError('BODY_INVALID', [': odd'], h), '/services/3: odd'],
    [new ApiError('BODY_INVALID', [' spaced'], h), '/services/3 spaced'],
    [new ApiError('SELF_REPLACEMENT', [], h), '/services/3 a service cannot replace itself'],
    [new ApiError('BODY_INVALID', ['x (body) y'], h), '/services/3 x (body) y'],
  ];
  for (const [e, want] of cases) {
    const p = e.at('/services/3');
    t.equal(p.message, want);
    t.match(p, { key: e.key, code: e.code, status: e.status, headers: h });
    t.ok(p instanceof ApiError);
  }
});

t.test('a 4xx carries no stack trace (an answer, not a fault); a 5xx keeps its stack; the limit is restored', async (t) => {
  const before = Error.stackTraceLimit;
  const four = new ApiError('SERVICE_NOT_FOUND');
  t.equal(Error.stackTraceLimit, before, 'restored after a 4xx');
  t.notMatch(four.stack ?? '', /\n\s+at /, 'no frames on a 4xx');
  const five = new ApiError('INTERNAL');
  t.equal(Error.stackTraceLimit, before, 'restored after a 5xx');
  t.match(five.stack ?? '', /\n\s+at /, 'frames on a 5xx');
});

t.test('the error-body memo is bounded, and answers the same body after it is emptied', async (t) => {
  const first = errorBody('BAD_QUERY', 'm0');
  t.equal(errorBody('BAD_QUERY', 'm0'), first);
  let max = 0;
  let full = -1;
  for (let i = 0; i < 3000; i++) {
    const body = errorBody('BAD_QUERY', `m${i}`);
    if (i % 500 === 0) t.equal(JSON.parse(body).error.message, `m${i}`);
    max = Math.max(max, errorBodiesHeld());
    if (full < 0 && errorBodiesHeld() === 1024) {
      full = i;
      t.equal(errorBody('BAD_QUERY', `m${i}`), body, 'a body held when the memo is full');
      t.equal(errorBodiesHeld(), 1024, 'is answered from it: a hit does not empty the memo');
    }
  }
  t.ok(full >= 0, 'the memo filled');
  t.equal(max, 1024, 'never more than 1024 bodies, and it fills to that');
  t.ok(errorBodiesHeld() < 1024, 'emptied when full, not evicted one by one');
  t.equal(errorBody('BAD_QUERY', 'm0'), first);
});

// The registry both ways, over the source. A key raised in src is a literal first argument
// of ApiError, reply.error, errorBodyOf or errorMessage; no throw site writes a message.
// (skipped only where the sources are instrumented: Stryker's sandbox rewrites the mutated
// files' literals, so the scan cannot read them there)
const src = files(join(ROOT, 'src')).filter((f) => !f.endsWith(join('domain', 'errors.ts')));
const instrumented = src.some((f) => readFileSync(f, 'utf8').includes('stryMutAct_9fa48'));
t.test('every key raised in src is registered, and every registered key is raised', { skip: instrumented && 'instrumented sources (Stryker sandbox)' }, async (t) => {
  const used = new Set<string>();
  const passed = new Set<string>();
  for (const f of src) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/(?:new ApiError|\.error|errorBodyOf|errorMessage)\(\s*'([A-Z][A-Z0-9_]*)'/g)) used.add(m[1]!);
    // a key passed on in a variable (typed ErrorKey): its literal elsewhere in the file counts
    for (const m of text.matchAll(/'([A-Z][A-Z0-9_]*)'/g)) if (m[1]! in REGISTRY) passed.add(m[1]!);
    // no hand-written errors: ApiError with a registry key (a literal, or a variable the compiler holds to ErrorKey)
    t.notMatch(text, /new ApiError\(\s*[^'\sA-Za-z]/, `${f}: new ApiError() names a registry key`);
    t.notMatch(text, /errorBody\(\s*'/, `${f}: no error body with a hand-written message`);
  }
  t.ok(used.size > 40, `the scan finds raised keys (${used.size})`);
  for (const key of keys) t.ok(used.has(key) || passed.has(key), `${key} is raised somewhere in src`);
  for (const key of used) {
    t.ok(key in REGISTRY, `${key} (raised in src) is registered`);
    t.notOk(Object.hasOwn(RETIRED, key), `${key} (raised in src) is not retired`);
  }
});

// (skipped only where test/http is absent: the mutation run's sandbox copies test/unit alone)
const httpTests = existsSync(join(ROOT, 'test', 'http'));
t.test('every public code is some key\'s code, and some test outside this file sees it answered (or it is retired)', { skip: !httpTests && 'no test/http here (Stryker sandbox)' }, async (t) => {
  const tests = files(join(ROOT, 'test')).filter((f) => !f.endsWith(join('unit', 'errors.test.ts')));
  const text = tests.map((f) => readFileSync(f, 'utf8')).join('\n');
  for (const [code] of codes) {
    if (Object.hasOwn(RETIRED, code)) continue;
    t.ok(keys.some((k) => REGISTRY[k].code === code), `${code} is the code of some key`);
    t.match(text, new RegExp(`['"\`]${code}['"\`]`), `${code} is asserted in some test`);
  }
});

// docs/errors.md (scripts/gen-errors-doc.mjs) is the reference a client developer reads:
// it must say what the server answers, code for code and word for word.
t.test('docs/errors.md lists the registry exactly', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
  const rows = new Map<string, string>();
  for (const m of doc.matchAll(/^\| `([A-Z0-9_]+)` \| `([A-Z0-9_]+)` \| (\d{3}) \| (.*) \|$/gm)) rows.set(m[1]!, `${m[2]} ${m[3]} ${m[4]!.replace(/\\\|/g, '|').replace(/&lt;/g, '<')}`);
  for (const key of keys) t.equal(rows.get(key), `${REGISTRY[key].code} ${ERRORS[REGISTRY[key].code]} ${REGISTRY[key].message}`, key);
  t.equal(rows.size, keys.length, 'no row for a key the registry lacks');
  const codeRows = new Map([...doc.matchAll(/^\| `([A-Z0-9_]+)` \| (\d{3}) \|$/gm)].map((m) => [m[1]!, Number(m[2])]));
  t.same(Object.fromEntries(codeRows), ERRORS, 'the public codes with their statuses');
});
