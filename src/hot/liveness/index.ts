// The liveness room's entry: what other rooms use of it.
export { Liveness } from './liveness.js';
export { reseedLeases } from './redis-lease.js';
export { heartbeatTokenHandler, leaseToken, type LivenessContext, withToken } from './routes.js';
export { healthCounts, tokenPrefix } from './store.js';
export { LeaseSweeper } from './sweeper.js';
export { HeartbeatTokenMemory } from './token-memory.js';
export { newHeartbeatToken } from './tokens.js';
export { registerLiveness } from './routes.js';
