// <registry-app>: the dashboard shell. Owns the session (login, CSRF token in memory via
// lib/api.ts, logout) and the hash route: "#/" overview, "#/sandbox/<uuid>" drill-down.
// The overview stays mounted while a drill-down is open, so the list keeps its filter and
// page; the drill-down is mounted only while shown, so its polling stops on leaving.
import { LitElement, css, html, nothing } from 'lit';
import { api, go, HttpError, setCsrf } from './lib/api.js';
import { shared } from './lib/theme.js';
import type { LocatedSandbox, MapPoint, Stats } from './lib/types.js';
import './admin-login.js';
import './global-stats.js';
import './sandbox-list.js';
import './sandbox-detail.js';
import './world-map.js';

type Phase = 'checking' | 'login' | 'ready';

export class RegistryApp extends LitElement {
  static override properties = {
    phase: { state: true },
    stats: { state: true },
    points: { state: true },
    route: { state: true },
    problem: { state: true },
  };

  declare phase: Phase;
  declare stats: Stats | null;
  declare points: MapPoint[];
  declare route: string;
  declare problem: string;

  constructor() {
    super();
    this.phase = 'checking';
    this.stats = null;
    this.points = [];
    this.route = '';
    this.problem = '';
  }

  private onHash = () => {
    this.route = location.hash.startsWith('#/sandbox/') ? decodeURIComponent(location.hash.slice('#/sandbox/'.length)) : '';
    if (!this.route && this.phase === 'ready') void this.loadOverview();
  };
  private onUnauthorized = () => {
    setCsrf('');
    this.phase = 'login';
  };

  override connectedCallback(): void {
    super.connectedCallback();
    window.addEventListener('hashchange', this.onHash);
    window.addEventListener('admin-unauthorized', this.onUnauthorized);
    this.onHash();
    void this.resume();
  }

  override disconnectedCallback(): void {
    window.removeEventListener('hashchange', this.onHash);
    window.removeEventListener('admin-unauthorized', this.onUnauthorized);
    super.disconnectedCallback();
  }

  /** A cookie from before a reload is still good: fetch its CSRF token again. */
  private async resume(): Promise<void> {
    try {
      const r = await api<{ csrfToken: string }>('/admin/session');
      this.signedIn(r.csrfToken);
    } catch {
      this.phase = 'login';
    }
  }

  private signedIn(token: string): void {
    setCsrf(token);
    this.phase = 'ready';
    void this.loadOverview();
  }

  private async loadOverview(): Promise<void> {
    try {
      const [stats, located] = await Promise.all([api<Stats>('/admin/api/stats'), api<LocatedSandbox[]>('/admin/api/locations')]);
      this.stats = stats;
      this.points = located.map((s) => ({ lat: s.lat, lon: s.lon, label: `${s.name} (${s.tier})`, href: `#/sandbox/${s.uuid}` }));
      this.problem = '';
    } catch (e) {
      if (!(e instanceof HttpError && e.status === 401)) this.problem = `Could not load the overview: ${(e as Error).message}`;
    }
  }

  private async logout(): Promise<void> {
    try {
      await api('/admin/session', { method: 'DELETE' });
    } catch (e) {
      if (!(e instanceof HttpError && e.status === 401)) {
        this.problem = `Logout failed: ${(e as Error).message}`;
        return;
      }
    }
    setCsrf('');
    this.stats = null;
    this.phase = 'login';
    go('#/');
  }

  override render() {
    if (this.phase === 'checking') return html`<p class="muted pad">Loading…</p>`;
    if (this.phase === 'login') return html`<admin-login @logged-in=${(e: CustomEvent<string>) => this.signedIn(e.detail)}></admin-login>`;
    const tiers = this.stats?.tiers ?? {};
    return html`
      <header>
        <a class="brand" href="#/">Service registry <span>admin</span></a>
        <button class="secondary" id="logout" @click=${() => void this.logout()}>Log out</button>
      </header>
      <main>
        ${this.problem ? html`<p class="error">${this.problem}</p>` : nothing}
        <section class="overview" ?hidden=${this.route !== ''}>
          <global-stats .stats=${this.stats}></global-stats>
          <div class="card map">
            <h2>Sandboxes on the map</h2>
            <world-map .points=${this.points}></world-map>
            <p class="muted">${this.points.length} located sandbox${this.points.length === 1 ? '' : 'es'}</p>
          </div>
          <sandbox-list .tiers=${tiers}></sandbox-list>
        </section>
        ${this.route ? html`<sandbox-detail .uuid=${this.route} .tiers=${tiers} @tier-changed=${() => void this.loadOverview()}></sandbox-detail>` : nothing}
      </main>
    `;
  }

  static override styles = [
    shared,
    css`
      :host {
        display: block;
        min-height: 100vh;
        background: #f3f5f8;
      }
      header {
        display: flex;
        align-items: center;
        justify-content: space-between;
        padding: 0.7rem 1.5rem;
        background: #16283f;
        color: #fff;
      }
      .brand {
        color: #fff;
        text-decoration: none;
        font-weight: 600;
        font-size: 1.1rem;
      }
      .brand span {
        font-weight: 400;
        opacity: 0.7;
      }
      main {
        max-width: 1200px;
        margin: 0 auto;
        padding: 1.2rem 1.5rem 3rem;
      }
      .overview {
        display: grid;
        gap: 1.2rem;
      }
      [hidden] {
        display: none !important;
      }
      .pad {
        padding: 2rem;
      }
    `,
  ];
}

declare global {
  interface HTMLElementTagNameMap {
    'registry-app': RegistryApp;
  }
}
customElements.define('registry-app', RegistryApp);
