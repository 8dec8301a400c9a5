// The registry's typed client: public searches and reads, sandboxes and their keyed calls.
// Paths, bodies and answers are typed from the OpenAPI document (./types.ts); queries are
// sent in canonical order (./query.ts), so no call costs a redirect.
import { pages, Poller, type Page, type PageOptions } from './paging.js';
import { withQuery, type QueryValue } from './query.js';
import { Transport, type CallOptions, type TransportOptions } from './transport.js';
import type {
  DeviceBinding,
  DeviceQuery,
  JsonRequest,
  JsonResponse,
  SandboxSearchQuery,
  SearchQuery,
  Service,
  ServiceCreate,
  ServicePatch,
} from './types.js';
import type { components } from './types.js';

export type ClientOptions = TransportOptions;
type Q = Readonly<Record<string, QueryValue>>;

export type CreatedSandbox = JsonResponse<'/sandboxes', 'post', 201>;
/** Prometheus HTTP SD target groups (`GET /discovery/prometheus`). */
export type TargetGroups = JsonResponse<'/discovery/prometheus', 'get', 200>;
export type SandboxPoll = JsonResponse<'/sandbox/{uuid}/poll', 'get', 200>;
export type SandboxDashboard = JsonResponse<'/sandbox/{uuid}/dashboard', 'get', 200>;
/** What a heartbeat reports (`passing` when none is given). */
export type HeartbeatStatus = NonNullable<components['schemas']['Heartbeat']['status']>;
/** A new heartbeat token (201 of the token routes). */
export type HeartbeatTokenBody = components['schemas']['HeartbeatToken'];

/** `PUT …/heartbeat` with the service's heartbeat token: 204, or an ApiError (401 wrong token, 429 over the sandbox's limit). */
async function beat(t: Transport, path: string, token: string, status: HeartbeatStatus | undefined, o?: CallOptions): Promise<void> {
  const res = await t.request('PUT', path, { ...o, key: token, body: status === undefined ? undefined : { status } });
  await res.body?.cancel();
}

const seg = (s: string) => encodeURIComponent(s);

async function* itemsOf<T>(it: AsyncGenerator<Page<T>>): AsyncGenerator<T> {
  for await (const p of it) yield* p.items;
}

/** Public calls (no key). `sandbox()` gives the keyed calls of one sandbox. */
export class RegistryClient {
  readonly transport: Transport;

  constructor(o: ClientOptions) {
    this.transport = new Transport(o);
  }

  /** Pages of `GET /services` (production), following `Link: rel="next"`. */
  searchPages(query: SearchQuery = {}, o?: PageOptions): AsyncGenerator<Page<Service>> {
    return pages<Service>(this.transport, withQuery('/services', query as Q), undefined, o);
  }

  /** Every matching production service, page after page. */
  search(query: SearchQuery = {}, o?: PageOptions): AsyncGenerator<Service> {
    return itemsOf(this.searchPages(query, o));
  }

  /** Pages of `GET /devices`. */
  devicePages(query: DeviceQuery = {}, o?: PageOptions): AsyncGenerator<Page<DeviceBinding>> {
    return pages<DeviceBinding>(this.transport, withQuery('/devices', query as Q), undefined, o);
  }

  /** Every matching device binding, page after page. */
  devices(query: DeviceQuery = {}, o?: PageOptions): AsyncGenerator<DeviceBinding> {
    return itemsOf(this.devicePages(query, o));
  }

  /** Conditional polling of a search: `poll()` answers `{changed: false}` while nothing changed. */
  servicesPoller(query: SearchQuery = {}, o: { maxPages?: number } = {}): Poller<Service> {
    return new Poller<Service>(this.transport, withQuery('/services', query as Q), undefined, o.maxPages);
  }

  /** Conditional polling of a device query. */
  devicesPoller(query: DeviceQuery = {}, o: { maxPages?: number } = {}): Poller<DeviceBinding> {
    return new Poller<DeviceBinding>(this.transport, withQuery('/devices', query as Q), undefined, o.maxPages);
  }

  /**
   * Every matching production service as Prometheus HTTP SD target groups, ordered by id (a
   * sandbox's: `sandbox().prometheusTargets()`). No paging: more than the server's
   * DISCOVERY_MAX_TARGETS is an ApiError TOO_MANY_TARGETS.
   */
  prometheusTargets(query: Omit<SearchQuery, 'limit' | 'after'> = {}, o?: CallOptions): Promise<TargetGroups> {
    return this.transport.json('GET', withQuery('/discovery/prometheus', query as Q), o);
  }

  /** One production service. */
  getService(id: string, o?: CallOptions): Promise<JsonResponse<'/services/{id}', 'get', 200>> {
    return this.transport.json('GET', `/services/${seg(id)}`, o);
  }

  /** The replacement candidates of a production service. */
  replacements(id: string, o?: CallOptions): Promise<JsonResponse<'/services/{id}/replacements', 'get', 200>> {
    return this.transport.json('GET', `/services/${seg(id)}/replacements`, o);
  }

  /** Creates a sandbox; its `apiKey` is shown this once. */
  createSandbox(body: JsonRequest<'/sandboxes', 'post'>, o?: CallOptions): Promise<CreatedSandbox> {
    return this.transport.json('POST', '/sandboxes', { ...o, body });
  }

  /** The keyed calls of one sandbox. */
  sandbox(uuid: string, apiKey: string): SandboxClient {
    return new SandboxClient(this.transport, uuid, apiKey);
  }

  /** Production writes with the admin key (a script's calls: `Authorization: Bearer <admin key>`). */
  admin(adminKey: string): AdminClient {
    return new AdminClient(this.transport, adminKey);
  }

  /**
   * Heartbeat of a leased production service, with the `heartbeatToken` its registration
   * returned (no other key): it stays or turns `passing`, or `critical` when `status` says so.
   */
  heartbeat(id: string, heartbeatToken: string, status?: HeartbeatStatus, o?: CallOptions): Promise<void> {
    return beat(this.transport, `/services/${seg(id)}/heartbeat`, heartbeatToken, status, o);
  }

  /** Request counters of a sandbox (public, not counted against its limit). */
  sandboxPoll(uuid: string, o?: CallOptions): Promise<SandboxPoll> {
    return this.transport.json('GET', `/sandbox/${seg(uuid)}/poll`, o);
  }

  /** A sandbox's dashboard data (public): its tier's limits, its services against serviceQuota, its counters. */
  sandboxDashboard(uuid: string, o?: CallOptions): Promise<SandboxDashboard> {
    return this.transport.json('GET', `/sandbox/${seg(uuid)}/dashboard`, o);
  }
}

/** Calls under `/sandbox/{uuid}` with the sandbox's key; each counts against its rate limit. */
export class SandboxClient {
  private readonly base: string;

  constructor(
    private readonly t: Transport,
    readonly uuid: string,
    private readonly apiKey: string,
  ) {
    this.base = `/sandbox/${seg(uuid)}/services`;
  }

  register(body: ServiceCreate, o?: CallOptions): Promise<JsonResponse<'/sandbox/{uuid}/services', 'post', 201>> {
    return this.t.json('POST', this.base, { ...o, key: this.apiKey, body });
  }

  /** All or nothing: 1-1000 registrations in one request (one rate-limit admission per service). */
  registerBatch(body: JsonRequest<'/sandbox/{uuid}/services/batch', 'post'>, o?: CallOptions): Promise<JsonResponse<'/sandbox/{uuid}/services/batch', 'post', 201>> {
    return this.t.json('POST', `${this.base}/batch`, { ...o, key: this.apiKey, body });
  }

  get(id: string, o?: CallOptions): Promise<JsonResponse<'/sandbox/{uuid}/services/{id}', 'get', 200>> {
    return this.t.json('GET', `${this.base}/${seg(id)}`, { ...o, key: this.apiKey });
  }

  patch(id: string, body: ServicePatch, o?: CallOptions): Promise<JsonResponse<'/sandbox/{uuid}/services/{id}', 'patch', 200>> {
    return this.t.json('PATCH', `${this.base}/${seg(id)}`, { ...o, key: this.apiKey, body });
  }

  async delete(id: string, o?: CallOptions): Promise<void> {
    const res = await this.t.request('DELETE', `${this.base}/${seg(id)}`, { ...o, key: this.apiKey });
    await res.body?.cancel();
  }

  replacements(id: string, o?: CallOptions): Promise<JsonResponse<'/sandbox/{uuid}/services/{id}/replacements', 'get', 200>> {
    return this.t.json('GET', `${this.base}/${seg(id)}/replacements`, { ...o, key: this.apiKey });
  }

  addReplacement(id: string, serviceId: string, o?: CallOptions): Promise<JsonResponse<'/sandbox/{uuid}/services/{id}/replacements', 'post', 201>> {
    return this.t.json('POST', `${this.base}/${seg(id)}/replacements`, { ...o, key: this.apiKey, body: { serviceId } });
  }

  /** Heartbeat of a leased service of this sandbox (its `heartbeatToken`; counts against the sandbox's limit). */
  heartbeat(id: string, heartbeatToken: string, status?: HeartbeatStatus, o?: CallOptions): Promise<void> {
    return beat(this.t, `${this.base}/${seg(id)}/heartbeat`, heartbeatToken, status, o);
  }

  /** A new heartbeat token for a leased service; the previous one stops working. */
  rotateHeartbeatToken(id: string, o?: CallOptions): Promise<HeartbeatTokenBody> {
    return this.t.json('POST', `${this.base}/${seg(id)}/heartbeat-token`, { ...o, key: this.apiKey });
  }

  /** Pages of the sandbox's services matching `query`. */
  /** The sandbox's matching services as Prometheus HTTP SD target groups (counts against its limit). */
  prometheusTargets(query: Omit<SearchQuery, 'limit' | 'after'> = {}, o?: CallOptions): Promise<TargetGroups> {
    return this.t.json('GET', withQuery('/discovery/prometheus', query as Q), { ...o, key: this.apiKey });
  }

  searchPages(query: SandboxSearchQuery = {}, o?: PageOptions): AsyncGenerator<Page<Service>> {
    return pages<Service>(this.t, withQuery(this.base, query as Q), this.apiKey, o);
  }

  search(query: SandboxSearchQuery = {}, o?: PageOptions): AsyncGenerator<Service> {
    return itemsOf(this.searchPages(query, o));
  }

  /** Conditional polling of a sandbox search (every poll, 304s included, counts against the limit). */
  poller(query: SandboxSearchQuery = {}, o: { maxPages?: number } = {}): Poller<Service> {
    return new Poller<Service>(this.t, withQuery(this.base, query as Q), this.apiKey, o.maxPages);
  }
}

/** Production registry writes under `/admin/api/services`, with the admin key. */
export class AdminClient {
  private readonly base = '/admin/api/services';

  constructor(
    private readonly t: Transport,
    private readonly adminKey: string,
  ) {}

  /** Registers a production service (with `ttl`: a lease, and the 201 carries `heartbeatToken` once). */
  register(body: ServiceCreate, o?: CallOptions): Promise<JsonResponse<'/admin/api/services', 'post', 201>> {
    return this.t.json('POST', this.base, { ...o, key: this.adminKey, body });
  }

  patch(id: string, body: ServicePatch, o?: CallOptions): Promise<JsonResponse<'/admin/api/services/{id}', 'patch', 200>> {
    return this.t.json('PATCH', `${this.base}/${seg(id)}`, { ...o, key: this.adminKey, body });
  }

  async delete(id: string, o?: CallOptions): Promise<void> {
    const res = await this.t.request('DELETE', `${this.base}/${seg(id)}`, { ...o, key: this.adminKey });
    await res.body?.cancel();
  }

  /** A new heartbeat token for a leased production service; the previous one stops working. */
  rotateHeartbeatToken(id: string, o?: CallOptions): Promise<HeartbeatTokenBody> {
    return this.t.json('POST', `${this.base}/${seg(id)}/heartbeat-token`, { ...o, key: this.adminKey });
  }
}
