// The JSON Lines format of `registry import` / `registry export`: one production service
// object per line, as GET /services/{id} returns it, plus `replacements` (candidate ids,
// ranked). `iotReady` is derived and ignored on input; `id` is kept, so that re-importing
// an export upserts the same services instead of adding copies. A line without `id` gets
// a new one (and would be added again by a second import).
import { ApiError } from '../../hot/domain/errors.js';
import { serviceObject, type ServiceRecord } from '../../hot/domain/service.js';
import { parseServiceCreate } from '../../hot/domain/validation.js';
import { newHeartbeatToken } from '../../hot/liveness/index.js';
import { newServiceId } from '../../hot/registry/index.js';
import type { BulkRow } from '../../hot/writes/index.js';

const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

export class LineError extends Error {
  override name = 'LineError';
}

/** One line -> a row to upsert; throws LineError with the reason. Blank lines -> null. */
export function parseLine(line: string): BulkRow | null {
  if (!line.trim()) return null;
  let obj: unknown;
  try {
    obj = JSON.parse(line);
  } catch {
    throw new LineError('not valid JSON');
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new LineError('not a JSON object');
  // `health` is derived state too (the lease's status). `ttl` / `deregisterAfter` are taken
  // and validated as in a registration: a line with `ttl` holds a lease (a new service, or
  // one without a lease, gets a heartbeat token, printed by the import); a line without
  // `ttl` leaves a stored lease alone (an export has none: re-importing it changes nothing)
  const { id, iotReady: _derived, health: _health, replacements, ...rest } = obj as Record<string, unknown>;
  if (id !== undefined && (typeof id !== 'string' || !ID_RE.test(id))) throw new LineError('"id" must be 1-64 of [A-Za-z0-9_-]');
  if (replacements !== undefined && (!Array.isArray(replacements) || !replacements.every((r) => typeof r === 'string' && ID_RE.test(r)))) {
    throw new LineError('"replacements" must be an array of service ids');
  }
  if (rest.deregisterAfter !== undefined && rest.ttl === undefined) throw new LineError('"deregisterAfter" needs "ttl"');
  try {
    const input = parseServiceCreate(rest);
    // drawn for every leased line, used only where the stored service holds no token yet
    const leaseToken = input.ttl != null ? newHeartbeatToken('prod') : undefined;
    return { id: (id as string | undefined) ?? newServiceId(), input, replacements: replacements as string[] | undefined, leaseToken };
  } catch (e) {
    if (e instanceof ApiError) throw new LineError(e.message);
    throw e;
  }
}

export function exportLine(s: ServiceRecord, replacements: string[]): string {
  return JSON.stringify({ ...serviceObject(s), replacements }) + '\n';
}
