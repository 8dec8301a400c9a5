// The Redis copy of a sandbox's metadata that the hot path reads: the key-hash -> uuid
// mapping and the name/tier/limit hash the rate-limit script uses. Derived from PostgreSQL,
// and applied with the row's version (apply-sandbox-1.lua): a copy read before a newer tier
// change committed never replaces the newer one, whoever writes it. Sandbox metadata that
// could not reach Redis waits in the outbox (PendingSandboxes): the projector applies it.
import type { Keys } from '../domain/keys.js';
import type { RedisClient } from '../redis/client.js';
import { integer } from '../redis/replies.js';

export interface SandboxMeta {
  uuid: string;
  name: string;
  tier: string;
  /** sandboxes.version, as a number or pg's decimal string */
  version: number | string;
}

/** Returns 1 applied, 0 when Redis already holds a newer version. */
export async function writeSandboxMeta(redis: RedisClient, keys: Keys, s: SandboxMeta, limit: number, keyHashHex: string): Promise<number> {
  const r = integer(await redis.applySandbox(keys.sandbox(s.uuid), String(s.version), s.name, s.tier, limit), 'apply-sandbox');
  if (keyHashHex) await redis.set(keys.sandboxKey(keyHashHex), s.uuid);
  return r;
}

/**
 * A new sandbox's namespace marker in the live generation and in one being built, unless it
 * has one (the index then serves the namespace as empty rather than as missing).
 */
export async function ensureNamespace(redis: RedisClient, keys: Keys, ns: string): Promise<void> {
  const gens = [await redis.get(keys.gen()), await redis.get(keys.building())];
  for (const g of gens) if (g) await redis.set(keys.ver(ns, g), '1', 'NX');
}

/**
 * Whether a sandbox's metadata (its key hash among it) may be missing from Redis: set when a
 * creation could not write it (then it waits in the outbox), and by each outbox sweep (the
 * projector: some sandbox rows still waiting or not). While set, key look-ups that miss in
 * Redis ask PostgreSQL (SandboxAuth's indexMarker).
 */
export class PendingSandboxes {
  private rowsWaiting = false;

  /** a creation left its metadata in the outbox */
  mark(): void {
    this.rowsWaiting = true;
  }

  /** what the last outbox sweep saw */
  set(waiting: boolean): void {
    this.rowsWaiting = waiting;
  }

  get waiting(): boolean {
    return this.rowsWaiting;
  }
}
