// The sandboxes room's entry: what other rooms use of sandboxes (their keys, rows, Redis
// copy and the keyed-route guard). Everything else here is the room's own.
export { SandboxAuth, type SandboxAuthOptions } from './auth.js';
export { PendingSandboxes, writeSandboxMeta } from './meta.js';
export { keyedRoutes, keyGuard, sandboxBase, sandboxNs, withRateHeaders, type KeyedRoute } from './keyed.js';
export { bearerKey, CHECKSUM_CHARS, hashKey, keyChecksum, newSandboxKey, RANDOM_CHARS, sandboxUuid } from './keys.js';
export { getSandbox, insertSandbox, loadSandboxMeta, type SandboxRow, setTier } from './store.js';
export { pollData, sandboxSummary, serviceQuota } from './summary.js';
export { registerSandbox } from './routes.js';
