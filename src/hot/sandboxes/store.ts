// Sandboxes in PostgreSQL: creation (only the key's hash is stored), look-up by key hash
// (a unique index, never a scan), tier changes with an audit row, and admin listings.
import { randomUUID } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import { query, withTx, type Pool } from '../pg/pool.js';

export interface SandboxRow {
  uuid: string;
  name: string;
  tier: string;
  lat: number | null;
  lon: number | null;
  created_at: Date;
  /** bumped by every change Redis copies (the tier); pg hands a bigint over as a string */
  version: string;
  /** its services, kept by the triggers of migration 0010 (the quota's use) */
  service_count: number;
}

const COLS = 'uuid, name, tier, lat, lon, created_at, version, service_count';

export async function insertSandbox(pool: Pool, name: string, prefix: string, keyHash: Buffer, tier: string, loc: { lat: number; lon: number } | null): Promise<SandboxRow> {
  const uuid = randomUUID();
  const r = await query<SandboxRow>(
    pool,
    `INSERT INTO sandboxes (uuid, name, prefix, key_hash, tier, lat, lon) VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING ${COLS}`,
    [uuid, name, prefix, keyHash, tier, loc?.lat ?? null, loc?.lon ?? null],
  );
  return r.rows[0]!;
}

export async function sandboxByKeyHash(pool: Pool, keyHash: Buffer): Promise<(SandboxRow & { key_hash: Buffer }) | null> {
  const r = await query<SandboxRow & { key_hash: Buffer }>(pool, `SELECT ${COLS}, key_hash FROM sandboxes WHERE key_hash = $1`, [keyHash]);
  return r.rows[0] ?? null;
}

/**
 * Queue a sandbox's metadata for Redis (an outbox row the sweeper applies): its creation
 * committed while Redis was away, so the index lacks its key hash until then.
 */
export async function enqueueSandbox(pool: Pool, uuid: string): Promise<void> {
  await query(pool, "INSERT INTO outbox (ns, service_id, kind) VALUES ($1, $1, 'sandbox')", [uuid]);
}

export async function getSandbox(pool: Pool, uuid: string): Promise<SandboxRow | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(uuid)) return null;
  const r = await query<SandboxRow>(pool, `SELECT ${COLS} FROM sandboxes WHERE uuid = $1`, [uuid.toLowerCase()]);
  return r.rows[0] ?? null;
}

/**
 * Change a sandbox's tier: the row (its version bumped under the row lock), the audit row
 * and an outbox row commit together; the caller then applies it to Redis (Projector.sync)
 * and the sweeper does if that fails. `outbox` is null when the tier was already that one.
 */
export async function setTier(pool: Pool, uuid: string, tier: string, by: string): Promise<SandboxRow & { outbox: number | null }> {
  return withTx(pool, async (c) => {
    const cur = await c.query<SandboxRow>(`SELECT ${COLS} FROM sandboxes WHERE uuid = $1 FOR UPDATE`, [uuid]);
    if (!cur.rows[0]) throw new ApiError('SANDBOX_NOT_FOUND');
    // nothing changes, so nothing is recorded in the audit trail (the call still succeeds)
    if (cur.rows[0].tier === tier) return { ...cur.rows[0], outbox: null };
    const r = await c.query<SandboxRow>(`UPDATE sandboxes SET tier = $2, version = version + 1 WHERE uuid = $1 RETURNING ${COLS}`, [uuid, tier]);
    await c.query('INSERT INTO tier_changes (sandbox, old_tier, new_tier, changed_by) VALUES ($1, $2, $3, $4)', [uuid, cur.rows[0].tier, tier, by]);
    const ob = await c.query<{ id: string }>("INSERT INTO outbox (ns, service_id, kind) VALUES ($1, $1, 'sandbox') RETURNING id", [uuid]);
    return { ...r.rows[0]!, outbox: Number(ob.rows[0]!.id) };
  });
}

/** The sandboxes' metadata as committed (a sync applies it with its version). */
/** The sandboxes' metadata as Redis holds it, the key hash included (the sbkey mapping). */
export async function loadSandboxMeta(pool: Pool, uuids: string[]): Promise<Map<string, SandboxRow & { key_hash: Buffer }>> {
  const r = await query<SandboxRow & { key_hash: Buffer }>(pool, `SELECT ${COLS}, key_hash FROM sandboxes WHERE uuid = ANY($1::uuid[])`, [uuids]);
  return new Map(r.rows.map((x) => [x.uuid, x]));
}
