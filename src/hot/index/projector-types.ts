// The projector's records and hooks: an outbox row (OutboxEntry), a committed write whose
// state its transaction returned (CommittedEntry), what the projector reports to its owner
// (ProjectorEvents, FailureStage) and its options (ProjectorOptions). Projector (projector.ts)
// takes and reports them; apply-services.ts reports through them too.
import type { IndexState } from '../store/services.js';
import type { ServiceText } from './apply-args.js';

/** One outbox row: a committed write whose index (or sandbox metadata) update is pending. */
export interface OutboxEntry {
  /** the outbox row's id */
  row: number;
  ns: string;
  /** the service id, or the sandbox uuid for kind "sandbox" */
  id: string;
  kind?: 'service' | 'sandbox';
}

/** What the projector reports to its owner (compose.ts: cache invalidation and metrics). */
export interface ProjectorEvents {
  /** a batch was applied, with the namespaces it touched */
  applied?: (namespaces: Set<string>) => void;
  /** an index update failed (it is also logged): registry_projector_failures_total */
  failed?: (stage: FailureStage) => void;
  /** a write was applied: its namespace base and the version after it (read-your-writes of the near cache) */
  version?: (base: string, ver: number) => void;
  /**
   * a service's state was applied to the live generation: bring its lease in Redis in line
   * (liveness/; awaited: a failure keeps the outbox row, like a failed index update)
   */
  lease?: (id: string, st: IndexState) => Promise<unknown>;
}

export type FailureStage = 'write' | 'sweep' | 'missing';

export interface ProjectorOptions {
  /**
   * Test hook: awaited after a sync has its states (loaded from PostgreSQL, or returned by
   * the write) and before it applies them to Redis, with their ids (tests hold a sync there
   * to force an interleaving).
   */
  beforeApply?: (ids: string[]) => Promise<void>;
  /**
   * How long the outbox rows of applied writes wait to be deleted together, ms: one DELETE
   * for every write of that time instead of one per write (a row still there when the
   * sweeper looks is applied again, which the revision rule makes harmless).
   */
  ackMs?: number;
}

/** A committed write whose state the transaction returned (store/writes.ts): applied without reading it again. */
export interface CommittedEntry {
  row: number;
  id: string;
  state: IndexState;
  /**
   * a registration: a new id, so Redis holds no lease of it — one without a lease needs no
   * lease apply (docs/decisions/group-commit.md)
   */
  created?: true;
  /** the state's serialised strings, when the write made them (its stored index text): not made again */
  text?: ServiceText;
}
