// Heartbeat tokens (contract, "Liveness"): the sandbox key's rules with `_hb_`:
//
//   <prefix>_hb_<random><checksum>
//
// prefix   the sandbox's key prefix, `prod` for production
// random   32 base62 characters from a CSPRNG (~190 bits)
// checksum 6 base62 characters, CRC32 of everything before it (sandboxes/keys.ts)
//
// A token whose checksum is wrong is refused from its text alone. Only sha256(token) is
// stored (services.hb_token_hash, and in the lease record in Redis).
import { randomBase62 } from '../domain/tokens.js';
import { CHECKSUM_CHARS, hashKey, keyChecksum, RANDOM_CHARS } from '../sandboxes/index.js';

export const HB_TOKEN_RE = /^[a-z0-9]{1,16}_hb_[0-9A-Za-z]{38}$/;
export const PRODUCTION_PREFIX = 'prod';

export function newHeartbeatToken(prefix: string): { token: string; hash: Buffer } {
  const body = `${prefix}_hb_${randomBase62(RANDOM_CHARS)}`;
  const token = body + keyChecksum(body);
  return { token, hash: hashKey(token) };
}

/** Whether a presented token can be one this registry issued (format and checksum; no look-up). */
export function tokenWellFormed(token: string): boolean {
  if (!HB_TOKEN_RE.test(token)) return false;
  const cut = token.length - CHECKSUM_CHARS;
  return keyChecksum(token.slice(0, cut)) === token.slice(cut);
}
