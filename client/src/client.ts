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

export type ClientOptions = TransportOptions;
type Q = Readonly<Record<string, QueryValue>>;

export type CreatedSandbox = JsonResponse<'/sandboxes', 'post', 201>;
export type SandboxPoll = JsonResponse<'/sandbox/{uuid}/poll', 'get', 200>;

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

  /** Request counters of a sandbox (public, not counted against its limit). */
  sandboxPoll(uuid: string, o?: CallOptions): Promise<SandboxPoll> {
    return this.transport.json('GET', `/sandbox/${seg(uuid)}/poll`, o);
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

  /** Pages of the sandbox's services matching `query`. */
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
