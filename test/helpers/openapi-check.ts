// Every response an HTTP test sees is checked against the document the server serves at
// /openapi.json (issue 24): the status is listed for the operation (path template + method),
// the body validates against its schema (ajv, strict mode, JSON Schema 2020-12 as OpenAPI
// 3.1 uses), a response without content has no body, and every header the document marks
// `required` is present and matches its schema. The test harness (server.ts: req/admin;
// raw-client.ts; checks.ts: rawGet) calls it on every answer and throws on a mismatch, so a
// new test gets the check for free and an undocumented status fails the suite.
import http from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { ambiguousPath } from '../../src/hot/domain/raw-path.js';

type Obj = Record<string, unknown>;

export interface Seen {
  method: string;
  /** request target: path and query as sent */
  target: string;
  status: number;
  header(name: string): string | null;
  body: string;
}

interface Expect {
  /** null: no content (the body must be empty); 'any': a non-JSON content type */
  body: ValidateFunction | null | 'any';
  headers: { name: string; required: boolean; check: ValidateFunction }[];
}

interface Op {
  responses: Map<string, Expect>;
}

interface PathEntry {
  template: string;
  re: RegExp;
  literals: number;
  ops: Map<string, Op>;
}

/**
 * Statuses any path may answer outside its operations (unknown path or method, URL too long,
 * outage); under /admin/api/ the catch-all authenticates first (401, 403 without the CSRF
 * token, 429 after too many wrong admin keys).
 */
const GENERIC = new Set([400, 401, 404, 405, 413, 414, 431, 503]);
const GENERIC_ADMIN = new Set([403, 429]);

/** The dashboard's static files: not part of the API, served as HTML, JS and CSS. */
const STATIC = (path: string) => path === '/admin' || (path.startsWith('/admin/') && !path.startsWith('/admin/api/') && path !== '/admin/session');

export class DocumentCheck {
  private readonly ajv: Ajv2020;
  private readonly paths: PathEntry[] = [];
  private readonly errorBody: ValidateFunction;

  constructor(readonly doc: Obj) {
    this.ajv = new Ajv2020({ strict: true, allErrors: false, allowUnionTypes: true });
    addFormats.default(this.ajv);
    // OpenAPI's own keyword inside schemas
    this.ajv.addKeyword({ keyword: 'x-key-pattern' });
    const schemas = ((doc.components as Obj | undefined)?.schemas ?? {}) as Record<string, Obj>;
    for (const [name, schema] of Object.entries(schemas)) this.ajv.addSchema(this.refs(schema) as Obj, `#/components/schemas/${name}`);
    this.errorBody = this.ajv.getSchema('#/components/schemas/Error')!;
    for (const [template, item] of Object.entries((doc.paths ?? {}) as Record<string, Obj>)) {
      const segs = template.split('/');
      const re = new RegExp('^' + segs.map((s) => (/^\{.+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/') + '$');
      const ops = new Map<string, Op>();
      for (const method of ['get', 'put', 'post', 'patch', 'delete']) {
        const op = item[method] as Obj | undefined;
        if (!op) continue;
        const responses = new Map<string, Expect>();
        for (const [status, resp] of Object.entries(op.responses as Record<string, Obj>)) responses.set(status, this.expect(resp));
        ops.set(method.toUpperCase(), { responses });
      }
      this.paths.push({ template, re, literals: segs.filter((s) => !s.startsWith('{')).length, ops });
    }
    // a literal segment beats a parameter (/services/changes before /services/{id})
    this.paths.sort((a, b) => b.literals - a.literals);
  }

  /** `#/components/schemas/X` refs: ajv knows each component by that id */
  private refs(x: unknown): unknown {
    if (Array.isArray(x)) return x.map((v) => this.refs(v));
    if (x && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, this.refs(v)]));
    return x;
  }

  private expect(resp: Obj): Expect {
    const content = resp.content as Record<string, { schema?: Obj }> | undefined;
    let body: Expect['body'] = null;
    if (content) {
      const j = content['application/json'];
      body = j?.schema ? this.ajv.compile(this.refs(j.schema) as Obj) : 'any';
    }
    const headers = Object.entries((resp.headers ?? {}) as Record<string, Obj>).map(([name, h]) => ({
      name,
      required: h.required === true,
      check: this.ajv.compile((h.schema ?? {}) as Obj),
    }));
    return { body, headers };
  }

  /** What is wrong with this answer (empty when nothing). */
  problems(s: Seen): string[] {
    if (s.status === 0) return []; // the connection closed without an answer
    const path = s.target.split('?')[0]!;
    if (STATIC(path)) return [];
    const head = s.method === 'HEAD';
    const method = head ? 'GET' : s.method;
    // a path with an encoded "/" or "." or a dot-segment is no instance of a template (a
    // client's URL would be resolved): the document's generic 400 (info.description)
    const entry = ambiguousPath(path) ? undefined : this.paths.find((p) => p.re.test(path));
    const op = entry?.ops.get(method);
    const where = `${s.method} ${s.target.slice(0, 120)} -> ${s.status}`;
    if (!entry || !op) {
      // no operation: an unknown path or method gets an error body with a generic status
      if (!GENERIC.has(s.status) && !(path.startsWith('/admin/api/') && GENERIC_ADMIN.has(s.status))) return [`${where}: ${entry ? `no ${method} operation on ${entry.template}` : 'no path of the document'} and ${s.status} is not a generic error status`];
      return head || !/json/.test(s.header('content-type') ?? '') ? [] : this.validate(this.errorBody, s.body, where);
    }
    const exp = op.responses.get(String(s.status)) ?? op.responses.get(`${Math.floor(s.status / 100)}XX`) ?? op.responses.get('default');
    if (!exp) return [`${where}: status ${s.status} is not documented for ${method} ${entry.template} (documented: ${[...op.responses.keys()].join(', ')})`];
    const out: string[] = [];
    for (const h of exp.headers) {
      const v = s.header(h.name);
      if (v === null) {
        if (h.required) out.push(`${where}: required header ${h.name} is missing`);
      } else if (!h.check(v)) out.push(`${where}: header ${h.name}: ${JSON.stringify(v)} ${this.ajv.errorsText(h.check.errors)}`);
    }
    if (head) return out;
    if (exp.body === null) {
      if (s.body !== '') out.push(`${where}: documented without a body, got ${JSON.stringify(s.body.slice(0, 80))}`);
    } else if (exp.body !== 'any') {
      if (!/^application\/json/.test(s.header('content-type') ?? '')) out.push(`${where}: content type ${s.header('content-type')} is not application/json`);
      out.push(...this.validate(exp.body, s.body, where));
    }
    return out;
  }

  private validate(v: ValidateFunction, body: string, where: string): string[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return [`${where}: body is not JSON: ${JSON.stringify(body.slice(0, 80))}`];
    }
    if (v(parsed)) return [];
    return [`${where}: body does not match the document: ${this.ajv.errorsText(v.errors)} in ${body.slice(0, 200)}`];
  }
}

const byText = new Map<string, DocumentCheck>();
const byPort = new Map<number, DocumentCheck>();

/** Fetch the served document of the server on `port` (once per distinct document) and remember it for that port. */
export async function loadDocument(port: number): Promise<DocumentCheck> {
  // a connection of its own (no keep-alive pool): a server started on the port of one
  // that a previous test closed would otherwise be asked on that server's dead socket
  const text = await new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/openapi.json', agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`/openapi.json: ${res.statusCode}`))));
      })
      .on('error', reject);
  });
  let c = byText.get(text);
  if (!c) {
    c = new DocumentCheck(JSON.parse(text) as Obj);
    byText.set(text, c);
  }
  byPort.set(port, c);
  return c;
}

export function forgetPort(port: number): void {
  byPort.delete(port);
}

/** Throw when the answer does not match the document of the server on `port` (if one is known). */
export function assertDocumented(port: number, s: Seen): void {
  const c = byPort.get(port);
  if (!c) return;
  const p = c.problems(s);
  if (p.length) throw new Error(`response does not match /openapi.json:\n  ${p.join('\n  ')}`);
}

/** The same for a fetch Response: reads a clone (the caller's body stays unread); streams are checked by their head only. */
export async function assertResponse(port: number, method: string, target: string, r: Response): Promise<void> {
  if (!byPort.has(port)) return;
  const stream = (r.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const body = stream || method === 'HEAD' ? '' : await r.clone().text();
  assertDocumented(port, { method, target, status: r.status, header: (n) => r.headers.get(n), body: stream ? '' : body });
}
