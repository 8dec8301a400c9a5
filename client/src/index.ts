// @registry/client: a typed client of the service registry's HTTP API (README.md here).
export { AdminClient, RegistryClient, SandboxClient, type ClientOptions, type CreatedSandbox, type HeartbeatStatus, type HeartbeatTokenBody, type SandboxDashboard, type SandboxPoll } from './client.js';
export { ApiError, UnexpectedResponseError, isApiError } from './errors.js';
export { Poller, type Page, type PageOptions, type PollOptions, type PollResult, type WatchOptions } from './paging.js';
export { canonicalQuery, compareCodePoints, encodeComponent, nextLink, withQuery, type QueryValue } from './query.js';
export { retryAfterMs, timerSleep, Transport, type CallOptions, type Fetch, type TransportOptions } from './transport.js';
export type * from './types.js';
