// The changes room's entry: what other rooms use of it.
export { ChangeHub } from './hub.js';
export { StreamShares, streamSharesBuffer } from './shares.js';
export { registerChanges } from './routes.js';
