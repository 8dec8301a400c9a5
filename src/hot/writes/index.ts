// The writes room's entry: what other rooms use of it.
export { bulkReplacements, type BulkRow, bulkUpsert, exportPage, mergePending } from './bulk.js';
export { GroupCommitter } from './group-commit.js';
export { addReplacementHandler, batchHandler, createHandler, deleteHandler, listReplacementsHandler, parseBatch, patchHandler } from './handlers.js';
export { patchService } from './patches.js';
export { createService } from './register.js';
export { registerSandboxWrites } from './routes.js';
