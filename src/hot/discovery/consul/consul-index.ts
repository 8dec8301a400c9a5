// X-Consul-Index (docs/decisions/consul-index.md): for one capability, one plus the sum of
// its members' revisions and of the revisions its former members left it at (the capability
// tombstones), those of services that are members again left out. Every committed change of
// the capability's answer raises one term (a member's new revision is larger than its old
// one; one that leaves trades its revision for a larger one; one that joins adds a term, or
// trades its tombstone's for a larger one), no term falls, and writes to services that are
// not and were not members touch none: the index grows with every change of the answer,
// never decreases, and does not move for other capabilities or namespaces. Every term is a
// revision PostgreSQL holds (services.version, service_tombstones.version, the rebuild's
// tombstones at the service's revision then): a rebuild of the index gives the same sum or
// a larger one. The catalog of every capability sums every capability's index. Pure.

/** A member: its id, capabilities and revision. */
export interface Member {
  id: string;
  capabilities: readonly string[];
  /** decimal text */
  rev: string;
}

/** Who left a capability, at which revision (decimal text). */
export interface Tombstone {
  capability: string;
  id: string;
  rev: string;
}

/**
 * The index of `capability` from its members and its tombstones; with `capability` null,
 * the index of the whole catalog: the sum over every capability (each member counted once
 * per capability it has, each tombstone of a non-member once).
 */
export function consulIndex(members: readonly Member[], tombs: readonly Tombstone[], capability: string | null): bigint {
  let sum = 1n;
  const held = new Set<string>();
  for (const m of members) {
    const n = capability === null ? m.capabilities.length : 1;
    sum += BigInt(m.rev) * BigInt(n);
    if (capability === null) for (const c of m.capabilities) held.add(c + '\0' + m.id);
    else held.add(capability + '\0' + m.id);
  }
  for (const t of tombs) {
    if (capability !== null && t.capability !== capability) continue;
    if (!held.has(t.capability + '\0' + t.id)) sum += BigInt(t.rev);
  }
  return sum;
}
