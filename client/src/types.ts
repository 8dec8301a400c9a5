// The client's names for the document's types. Everything here is derived from the
// generated `paths` and `components` (client/src/generated/openapi.ts, made from the
// server's OpenAPI document at build time): nothing is typed by hand.
import type { components, paths } from './generated/openapi.js';

export type { components, paths };
type Schemas = components['schemas'];

export type Service = Schemas['Service'];
export type DeviceBinding = Schemas['DeviceBinding'];
export type Sandbox = Schemas['Sandbox'];
export type ServiceCreate = Schemas['ServiceCreate'];
export type ServicePatch = Schemas['ServicePatch'];
export type SandboxCreate = Schemas['SandboxCreate'];
export type ErrorBody = Schemas['Error'];
/** The registry's error codes, as the document lists them. */
export type ErrorCode = ErrorBody['error']['code'];

/** A path's query parameters, as the document declares them for `get`. */
type QueryOf<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;

/** Callers may give one value where the document has an array, and a boolean for a `true` flag. */
type Loose<T> = T extends readonly (infer E)[] ? E | readonly E[] : [T] extends ['true'] ? boolean | 'true' : T;
export type QueryInput<Q> = { [K in keyof Q]?: Loose<NonNullable<Q[K]>> | null };

export type SearchQuery = QueryInput<Omit<QueryOf<'/services'>, 'after'>>;
export type DeviceQuery = QueryInput<Omit<QueryOf<'/devices'>, 'after'>>;
export type SandboxSearchQuery = QueryInput<Omit<QueryOf<'/sandbox/{uuid}/services'>, 'after'>>;

/** The JSON body of an operation's `status` response. */
export type JsonResponse<P extends keyof paths, M extends keyof paths[P], S extends number> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer B } } };
}
  ? B
  : never;

/** The JSON request body of an operation. */
export type JsonRequest<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;
