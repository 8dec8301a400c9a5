// The readiness room's entry: what other rooms use of it.
export { AppState, catalogBuffer } from './state.js';
export { createWatchers } from './watcher.js';
export { registerReadiness } from './routes.js';
