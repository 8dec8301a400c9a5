// The projector's records and hooks: an outbox row (OutboxEntry), a committed write whose
// state its transaction returned (CommittedEntry), what the projector reports to its owner
// (ProjectorEvents, FailureStage) and its options (ProjectorOptions). Projector (projector.ts)
// takes and reports them; apply-services.ts reports through them too.
import type { PendingSandboxes } from '../sandboxes/index.js';
import type { IndexState } from './state.js';
import type { ServiceText } from './apply-args.js';

/**
 * The writes an outbox row stands for, in SQL over its columns: one, or each service of a row
 * that names many (an import's chunk, migration 0017). Projector.lag() and a rebuild's count of
 * the rows it covered (reindex/covered.ts) count with it.
 */
export const OUTBOX_ROW_WRITES = 'coalesce(cardinality(service_ids), 1)';

/** One outbox row: a committed write whose index (or sandbox metadata) update is pending. */
export interface OutboxEntry {
  /** the outbox row's id */
  row: number;
  ns: string;
  /** the service id, or the sandbox uuid for kind "sandbox" */
  id: string;
  kind?: 'service' | 'sandbox';
}

/**
 * Liveness's side of an apply (liveness/ implements it and attaches itself: Projector.attach):
 * a service's state reached the live generation, so its lease in Redis follows (awaited: a
 * failure keeps the outbox row, like a failed index update).
 */
export interface LeaseSync {
  applyState(id: string, st: IndexState): Promise<unknown>;
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
  /** where the sweeps say whether sandbox metadata still waits (the thread's one; default: its own) */
  pendingSandboxes?: PendingSandboxes;
}

/** A committed write whose state the transaction returned (writes/register.ts): applied without reading it again. */
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
