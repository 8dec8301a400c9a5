// <sandbox-detail>: the drill-down of one sandbox: its facts (GET /admin/api/sandboxes/
// {uuid}: its services against its tier's quota among them), its place on the world map,
// the live rate chart, the tier form and the history of tier changes (who, when).
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { api, HttpError } from './lib/api.js';
import { shared } from './lib/theme.js';
import type { Poll, SandboxDetail as Detail, SandboxSummary } from './lib/types.js';
import './rate-chart.js';
import './tier-form.js';
import './world-map.js';

const count = (n: number) => n.toLocaleString('en-GB');

export class SandboxDetail extends LitElement {
  static override properties = {
    uuid: { type: String },
    tiers: { attribute: false },
    data: { state: true },
    live: { state: true },
    problem: { state: true },
  };

  declare uuid: string;
  declare tiers: Record<string, number>;
  declare data: Detail | null;
  declare live: Poll | null;
  declare problem: string;

  constructor() {
    super();
    this.uuid = '';
    this.tiers = {};
    this.data = null;
    this.live = null;
    this.problem = '';
  }

  override updated(changed: PropertyValues<this>): void {
    if (changed.has('uuid') && this.uuid) void this.load();
  }

  private async load(): Promise<void> {
    try {
      this.data = await api<Detail>(`/admin/api/sandboxes/${encodeURIComponent(this.uuid)}`);
      this.problem = '';
    } catch (e) {
      this.data = null;
      this.problem = e instanceof HttpError && e.status === 404 ? 'There is no sandbox with this id.' : (e as Error).message;
    }
  }

  private tierChanged(s: SandboxSummary): void {
    // show the new tier and limit at once, then fetch the history that now has a new row
    if (this.data) this.data = { ...this.data, tier: s.tier, rateLimit: s.rateLimit };
    void this.load();
  }

  override render() {
    if (this.problem) return html`<p><a href="#/">‹ All sandboxes</a></p><p class="error">${this.problem}</p>`;
    const d = this.data;
    if (!d) return html`<p class="muted">Loading…</p>`;
    const total = this.live?.total ?? d.counters?.total ?? 0;
    const rejected = this.live?.rejected ?? d.counters?.rejected ?? 0;
    return html`
      <p><a href="#/">‹ All sandboxes</a></p>
      <div class="title">
        <h1>${d.name}</h1>
        <span class="tier ${d.tier}" id="tier">${d.tier}</span>
        <span class="limit" id="limit">${d.rateLimit} requests/min</span>
      </div>
      <p class="muted mono">${d.uuid}</p>
      <div class="grid">
        <div class="card facts">
          <h2>Facts</h2>
          <dl>
            <dt>Services</dt>
            <dd>
              <span id="services">${count(d.serviceCount)} of ${count(d.serviceQuota)}</span>
              <meter id="quota" min="0" max=${d.serviceQuota} high=${d.serviceQuota * 0.9} optimum="0" .value=${d.serviceCount} title="the tier's quota of services"></meter>
            </dd>
            <dt>Health</dt><dd id="health">${d.health.passing} passing · ${d.health.critical} critical · ${d.health.unknown} unknown</dd>
            <dt>Created</dt><dd>${new Date(d.createdAt).toLocaleString('en-GB')}</dd>
            <dt>Location</dt><dd>${d.location ? `${d.location.lat.toFixed(3)}, ${d.location.lon.toFixed(3)}` : 'not given'}</dd>
            <dt>Requests</dt><dd id="total">${total}</dd>
            <dt>Rejected (429)</dt><dd>${rejected}</dd>
          </dl>
        </div>
        <div class="card">
          <h2>Location</h2>
          ${d.location
            ? html`<world-map single .points=${[{ ...d.location, label: d.name }]}></world-map>`
            : html`<world-map></world-map><p class="muted">This sandbox has no location.</p>`}
        </div>
      </div>
      <div class="card">
        <h2>Request rate</h2>
        <rate-chart .uuid=${d.uuid} .limit=${d.rateLimit} @poll-data=${(e: CustomEvent<Poll>) => (this.live = e.detail)}></rate-chart>
      </div>
      <div class="card">
        <h2>Tier</h2>
        <tier-form .uuid=${d.uuid} .tier=${d.tier} .tiers=${this.tiers} @tier-changed=${(e: CustomEvent<SandboxSummary>) => this.tierChanged(e.detail)}></tier-form>
        ${d.tierChanges.length
          ? html`<table>
              <thead><tr><th>When</th><th>From</th><th>To</th><th>By</th></tr></thead>
              <tbody>${d.tierChanges.map((c) => html`<tr><td>${new Date(c.at).toLocaleString('en-GB')}</td><td>${c.from}</td><td>${c.to}</td><td>${c.by}</td></tr>`)}</tbody>
            </table>`
          : html`<p class="muted">No tier changes yet.</p>`}
      </div>
      ${nothing}
    `;
  }

  static override styles = [
    shared,
    css`
      :host {
        display: grid;
        gap: 1rem;
      }
      p {
        margin: 0;
      }
      a {
        color: #2457a6;
        text-decoration: none;
      }
      .title {
        display: flex;
        align-items: baseline;
        gap: 0.8rem;
        flex-wrap: wrap;
      }
      h1 {
        margin: 0;
        font-size: 1.5rem;
      }
      .limit {
        font-weight: 600;
      }
      .mono {
        font-family: ui-monospace, monospace;
      }
      .grid {
        display: grid;
        grid-template-columns: minmax(220px, 1fr) 2fr;
        gap: 1rem;
      }
      dl {
        display: grid;
        grid-template-columns: auto 1fr;
        gap: 0.4rem 1rem;
        margin: 0;
      }
      dt {
        color: #5d6976;
      }
      dd {
        margin: 0;
        font-weight: 500;
      }
      meter {
        display: block;
        width: 100%;
        margin-top: 0.2rem;
      }
      table {
        width: 100%;
        border-collapse: collapse;
        margin-top: 1rem;
        font-size: 0.9rem;
      }
      th,
      td {
        text-align: left;
        padding: 0.35rem 0.5rem;
        border-bottom: 1px solid #edf0f3;
      }
      th {
        color: #5d6976;
        font-size: 0.8rem;
      }
    `,
  ];
}

declare global {
  interface HTMLElementTagNameMap {
    'sandbox-detail': SandboxDetail;
  }
}
customElements.define('sandbox-detail', SandboxDetail);
