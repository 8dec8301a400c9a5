// Writes the bench data set into its own PostgreSQL database: created fresh on the server
// of DATABASE_URL, migrated with the project's migrator, filled with multi-row INSERTs
// over unnest() arrays (thousands of rows per statement, no outbox rows: the index is
// rebuilt from the tables afterwards; each service's index text is stored with it as every
// write stores it: registry/state.ts indexText(), the write path's serialiser), and stamped with a marker row so that a re-run with
// the same parameters reuses it.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PRODUCTION } from '../src/hot/domain/keys.js';
import { migrate } from '../src/hot/migrate.js';
import { createPool, type Pool } from '../src/hot/pg/pool.js';
import { indexText, loadStatesWhere, newServiceId } from '../src/hot/registry/state.js';
import { hashKey, newSandboxKey } from '../src/hot/sandboxes/keys.js';
import { sandboxLocation, sandboxTier, serviceGenerator, type DatasetSpec, type GenService } from './dataset.js';

/** services per INSERT round (their capability and property rows go in the same round) */
const BATCH = 5_000;
const SUNSET = '2027-06-30';

export interface StoredDataset {
  fingerprint: string;
  deprecatedId: string;
  /** the enterprise sandboxes, in creation order */
  enterprise: { uuid: string; name: string }[];
  productionServices: number;
  sandboxServices: number;
  sandboxes: number;
  /** how long generating and loading took when the database was built */
  loadMs: number;
}

/** The same server and credentials as `baseUrl`, another database. */
export function databaseUrl(baseUrl: string, db: string): string {
  const u = new URL(baseUrl);
  u.pathname = '/' + db;
  return u.toString();
}

async function readMarker(url: string): Promise<StoredDataset | null> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
  } catch {
    return null; // no such database yet
  }
  try {
    const r = await c.query<{ info: StoredDataset }>('SELECT info FROM bench_dataset LIMIT 1');
    return r.rows[0]?.info ?? null;
  } catch {
    return null; // no marker table: an interrupted load
  } finally {
    await c.end();
  }
}

/** The stored data set when its fingerprint matches, else null (after dropping what is there). */
export async function cachedDataset(baseUrl: string, db: string, fingerprint: string): Promise<StoredDataset | null> {
  const info = await readMarker(databaseUrl(baseUrl, db));
  return info && info.fingerprint === fingerprint ? info : null;
}

/** Run `sql` for database `db` on the server of `baseUrl` (a name checked first: it is spliced into the SQL). */
async function onServer(baseUrl: string, db: string, sql: string[]): Promise<void> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(db)) throw new Error(`unsafe database name ${db}`);
  const c = new pg.Client({ connectionString: baseUrl, connectionTimeoutMillis: 3000 });
  await c.connect();
  try {
    for (const q of sql) await c.query(q);
  } finally {
    await c.end();
  }
}

export function recreateDatabase(baseUrl: string, db: string): Promise<void> {
  return onServer(baseUrl, db, [`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, `CREATE DATABASE ${db}`]);
}

/** A bench's throw-away database, gone (its connections closed by force). */
export function dropDatabase(baseUrl: string, db: string): Promise<void> {
  return onServer(baseUrl, db, [`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]);
}

interface Columns {
  ids: string[];
  ns: string[];
  seq: number[];
  endpoint: string[];
  doc: string[];
  members: string[];
  hdr: string[];
  capSvc: string[];
  cap: string[];
  capOrd: number[];
  propSvc: string[];
  propKey: string[];
  propVal: string[];
  iotSvc: string[];
  iotDc: string[];
  iotProto: string[];
}

function columns(): Columns {
  return { ids: [], ns: [], seq: [], endpoint: [], doc: [], members: [], hdr: [], capSvc: [], cap: [], capOrd: [], propSvc: [], propKey: [], propVal: [], iotSvc: [], iotDc: [], iotProto: [] };
}

function push(c: Columns, id: string, ns: string, seq: number, s: GenService): void {
  c.ids.push(id);
  c.ns.push(ns);
  c.seq.push(seq);
  c.endpoint.push(s.endpoint);
  const props = Object.create(null) as Record<string, string>;
  for (const [k, v] of s.properties) props[k] = v;
  const text = indexText({ id, ns, seq, endpoint: s.endpoint, capabilities: s.capabilities, properties: props, iot: s.iot, deprecated: false, deprecatedAt: null, locked: false, sunsetDate: null, replacementSeqs: [] });
  c.doc.push(text.doc);
  c.members.push(text.members);
  c.hdr.push(text.hdr);
  s.capabilities.forEach((cap, i) => {
    c.capSvc.push(id);
    c.cap.push(cap);
    c.capOrd.push(i + 1);
  });
  for (const [k, v] of s.properties) {
    c.propSvc.push(id);
    c.propKey.push(k);
    c.propVal.push(v);
  }
  if (s.iot) {
    // tokens never hold a comma, so a joined string survives unnest() and string_to_array()
    c.iotSvc.push(id);
    c.iotDc.push(s.iot.deviceClasses.join(','));
    c.iotProto.push(s.iot.protocols.join(','));
  }
}

async function flush(pool: Pool, c: Columns): Promise<void> {
  if (!c.ids.length) return;
  await pool.query(
    'INSERT INTO services (id, ns, seq, endpoint, idx_doc, idx_members, idx_hdr) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[])',
    [c.ids, c.ns, c.seq, c.endpoint, c.doc, c.members, c.hdr],
  );
  // the detail tables only reference committed services, so they can go in parallel
  await Promise.all([
    pool.query('INSERT INTO service_capabilities (service_id, capability, ord) SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[])', [c.capSvc, c.cap, c.capOrd]),
    pool.query('INSERT INTO service_properties (service_id, key, value) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])', [c.propSvc, c.propKey, c.propVal]),
    c.iotSvc.length
      ? pool.query(
          `INSERT INTO iot_profiles (service_id, device_classes, protocols)
           SELECT s, string_to_array(d, ','), string_to_array(p, ',') FROM unnest($1::text[], $2::text[], $3::text[]) AS t(s, d, p)`,
          [c.iotSvc, c.iotDc, c.iotProto],
        )
      : Promise.resolve(),
  ]);
}

/**
 * Fill a freshly created database. Production services get seqs 1..P in generation
 * order, then each sandbox's services follow; the sequence is moved past them so that
 * later writes (if any) get fresh seqs. Service 0 is the deprecated one, with the next
 * `replacements` services as its ranked candidates.
 */
export async function loadDataset(url: string, spec: DatasetSpec, fingerprint: string, log: (m: string) => void): Promise<StoredDataset> {
  const t0 = Date.now();
  // two flushes in flight, three statements each: a free connection for every one (a
  // checkout that waits more than the pool's 3 s connect timeout fails the load)
  const pool = createPool(url, 6);
  try {
    await migrate(pool);
    const next = serviceGenerator(spec);
    let seq = 0;
    let cols = columns();
    const prodIds: string[] = [];
    const pending: Promise<void>[] = [];
    const emit = async (ns: string, label: string) => {
      const id = newServiceId();
      push(cols, id, ns, ++seq, next(label));
      if (cols.ids.length >= BATCH) {
        const full = cols;
        cols = columns();
        // generating the next batch overlaps with PostgreSQL writing this one; two in flight at most
        pending.push(flush(pool, full));
        if (pending.length >= 2) await pending.shift();
      }
      return id;
    };
    for (let i = 0; i < spec.production; i++) {
      const id = await emit(PRODUCTION, `svc-${i}`);
      if (i <= spec.replacements) prodIds.push(id);
    }
    log(`  generated ${spec.production} production services`);
    const enterprise: { uuid: string; name: string }[] = [];
    const sbUuid: string[] = [];
    const sbName: string[] = [];
    const sbPrefix: string[] = [];
    const sbHash: string[] = [];
    const sbTier: string[] = [];
    const sbLat: (number | null)[] = [];
    const sbLon: (number | null)[] = [];
    for (let i = 0; i < spec.sandboxes; i++) {
      const uuid = randomUUID();
      const name = `bench sandbox ${i + 1}`;
      // the key is thrown away: the bench gives the sandboxes it uses a fresh key per run
      const { key, prefix } = newSandboxKey(name);
      const loc = sandboxLocation(spec, i);
      sbUuid.push(uuid);
      sbName.push(name);
      sbPrefix.push(prefix);
      sbHash.push('\\x' + hashKey(key).toString('hex'));
      sbTier.push(sandboxTier(spec, i));
      sbLat.push(loc?.lat ?? null);
      sbLon.push(loc?.lon ?? null);
      if (sandboxTier(spec, i) === 'enterprise') enterprise.push({ uuid, name });
    }
    await pool.query(
      `INSERT INTO sandboxes (uuid, name, prefix, key_hash, tier, lat, lon)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::float8[], $7::float8[])`,
      [sbUuid, sbName, sbPrefix, sbHash, sbTier, sbLat, sbLon],
    );
    for (let i = 0; i < spec.sandboxes; i++) {
      for (let j = 0; j < spec.servicesPerSandbox; j++) await emit(sbUuid[i]!, `sb${i + 1}-svc-${j}`);
    }
    pending.push(flush(pool, cols));
    await Promise.all(pending);
    log(`  generated ${spec.sandboxes} sandboxes × ${spec.servicesPerSandbox} services`);
    await pool.query(`SELECT setval('service_seq', $1)`, [seq]);
    const [dep, ...cands] = prodIds;
    await pool.query(
      `UPDATE services SET deprecated = true, deprecated_at = now(), locked = true, sunset_date = $2 WHERE id = $1`,
      [dep, SUNSET],
    );
    await pool.query(
      'INSERT INTO replacements (service_id, candidate_id, rank) SELECT $1, c, r FROM unnest($2::text[]) WITH ORDINALITY AS t(c, r)',
      [dep, cands],
    );
    // its index text changed with the deprecation: stored from its state as committed
    const [depState] = await loadStatesWhere(pool, 'WHERE s.id = $1', [dep]);
    const depText = indexText(depState!);
    await pool.query('UPDATE services SET idx_doc = $2, idx_members = $3, idx_hdr = $4 WHERE id = $1', [dep, depText.doc, depText.members, depText.hdr]);
    await pool.query('ANALYZE');
    const info: StoredDataset = {
      fingerprint,
      deprecatedId: dep!,
      enterprise,
      productionServices: spec.production,
      sandboxServices: spec.sandboxes * spec.servicesPerSandbox,
      sandboxes: spec.sandboxes,
      loadMs: Date.now() - t0,
    };
    await pool.query('CREATE TABLE bench_dataset (info jsonb NOT NULL)');
    await pool.query('INSERT INTO bench_dataset (info) VALUES ($1)', [JSON.stringify(info)]);
    return info;
  } finally {
    await pool.end();
  }
}

/**
 * Give a sandbox a fresh API key for this run (keys are never stored, so a cached data set
 * cannot know the old one). Returns the key and the old and new hashes (hex).
 */
export async function rotateKey(pool: Pool, uuid: string, name: string): Promise<{ key: string; oldHash: string; newHash: string; tier: string; version: string }> {
  const { key, prefix } = newSandboxKey(name);
  const hash = hashKey(key);
  const old = await pool.query<{ key_hash: Buffer; tier: string; version: string }>('SELECT key_hash, tier, version FROM sandboxes WHERE uuid = $1', [uuid]);
  if (!old.rows[0]) throw new Error(`bench sandbox ${uuid} is missing`);
  await pool.query('UPDATE sandboxes SET key_hash = $2, prefix = $3 WHERE uuid = $1', [uuid, hash, prefix]);
  return { key, oldHash: old.rows[0].key_hash.toString('hex'), newHash: hash.toString('hex'), tier: old.rows[0].tier, version: old.rows[0].version };
}

/** Facts about the stored data the scenarios need: set sizes and the sandbox's top capability. */
export async function countWhere(pool: Pool, sql: string, params: unknown[]): Promise<number> {
  const r = await pool.query<{ n: string }>(sql, params);
  return Number(r.rows[0]?.n ?? 0);
}
