// The held room's entry: what other rooms use of it.
export { HeldRequests, type HeldOptions } from './held.js';
export { preferredWait } from './prefer.js';
export { type Answer, type Watch } from './types.js';
export { Wakes } from './wake.js';
