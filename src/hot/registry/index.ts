// The registry room's entry: what other rooms use of it.
export { applyArgs, pageArgs, pageRowApplyArgs } from './apply-args.js';
export { appendChanges, CHANGE_LOCK_ID, type ChangeEvent, type ChangeInput, type ChangeType, lastChangeId, pruneChanges, readAllChanges, readChanges } from './events.js';
export { type CapabilityTombstone, type IndexPageRow, loadCapabilityTombstonePage, loadIndexPage, loadTombstonePage, NAMESPACE_CAPABILITY_TOMBSTONES } from './index-pages.js';
export { markNamespace } from './mark-namespace.js';
export { lastOutboxRow, outboxWaitsUpTo } from './outbox-marks.js';
export { Projector } from './projector.js';
export { bumpVersions, bumpVersionsWithText, type IndexState, indexText, type IndexText, loadReplacements, loadService, loadStatesWhere, newServiceId, stateRecord, type StateRow, type WriteResult } from './state.js';
export { addReplacement, type CommittedWrite, type DeleteItem, deleteService, deleteServices, rotateToken, sandboxesOf } from './write-functions.js';
export { WriteAppliedEvents, type WriteApplied, type WriteAppliedListener } from './write-applied.js';
export { type LeaseSync, OUTBOX_ROW_WRITES } from './projector-types.js';
export { countProjectorFailure, sampleOutbox } from './metrics.js';
