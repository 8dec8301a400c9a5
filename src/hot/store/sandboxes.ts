// Sandboxes in PostgreSQL: creation (only the key's hash is stored), look-up by key hash
// (a unique index, never a scan), tier changes with an audit row, and admin listings.
import { randomUUID } from 'node:crypto';
import { ApiError } from '../domain/errors.js';
import { query, withTx, type Pool } from './pool.js';

export interface SandboxRow {
  uuid: string;
  name: string;
  tier: string;
  lat: number | null;
  lon: number | null;
  created_at: Date;
}

export async function insertSandbox(pool: Pool, name: string, prefix: string, keyHash: Buffer, tier: string, loc: { lat: number; lon: number } | null): Promise<SandboxRow> {
  const uuid = randomUUID();
  const r = await query<SandboxRow>(
    pool,
    `INSERT INTO sandboxes (uuid, name, prefix, key_hash, tier, lat, lon) VALUES ($1, $2, $3, $4, $5, $6, $7)
     RETURNING uuid, name, tier, lat, lon, created_at`,
    [uuid, name, prefix, keyHash, tier, loc?.lat ?? null, loc?.lon ?? null],
  );
  return r.rows[0]!;
}

export async function sandboxByKeyHash(pool: Pool, keyHash: Buffer): Promise<(SandboxRow & { key_hash: Buffer }) | null> {
  const r = await query<SandboxRow & { key_hash: Buffer }>(pool, 'SELECT uuid, name, tier, lat, lon, created_at, key_hash FROM sandboxes WHERE key_hash = $1', [keyHash]);
  return r.rows[0] ?? null;
}

export async function getSandbox(pool: Pool, uuid: string): Promise<SandboxRow | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(uuid)) return null;
  const r = await query<SandboxRow>(pool, 'SELECT uuid, name, tier, lat, lon, created_at FROM sandboxes WHERE uuid = $1', [uuid.toLowerCase()]);
  return r.rows[0] ?? null;
}

export async function countServices(pool: Pool, ns: string): Promise<number> {
  const r = await query<{ n: string }>(pool, 'SELECT count(*) AS n FROM services WHERE ns = $1', [ns]);
  return Number(r.rows[0]!.n);
}

export async function setTier(pool: Pool, uuid: string, tier: string, by: string): Promise<SandboxRow> {
  return withTx(pool, async (c) => {
    const cur = await c.query<SandboxRow>('SELECT uuid, name, tier, lat, lon, created_at FROM sandboxes WHERE uuid = $1 FOR UPDATE', [uuid]);
    if (!cur.rows[0]) throw new ApiError('NOT_FOUND', 'no such sandbox');
    // nothing changes, so nothing is recorded in the audit trail (the call still succeeds)
    if (cur.rows[0].tier === tier) return cur.rows[0];
    const r = await c.query<SandboxRow>('UPDATE sandboxes SET tier = $2 WHERE uuid = $1 RETURNING uuid, name, tier, lat, lon, created_at', [uuid, tier]);
    await c.query('INSERT INTO tier_changes (sandbox, old_tier, new_tier, changed_by) VALUES ($1, $2, $3, $4)', [uuid, cur.rows[0].tier, tier, by]);
    return r.rows[0]!;
  });
}
