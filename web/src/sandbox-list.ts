// <sandbox-list>: one page of sandboxes from GET /admin/api/sandboxes with a tier filter.
// Previous/next and the page number come from the server (hasPrev, hasNext, prevPage,
// nextPage, displayPage): this element does no page arithmetic of its own.
import { LitElement, css, html, nothing, type PropertyValues } from 'lit';
import { api } from './lib/api.js';
import { shared } from './lib/theme.js';
import type { SandboxPage } from './lib/types.js';

export class SandboxList extends LitElement {
  static override properties = {
    tiers: { attribute: false },
    tier: { state: true },
    data: { state: true },
    problem: { state: true },
  };

  declare tiers: Record<string, number>;
  /** '' = all tiers */
  declare tier: string;
  declare data: SandboxPage | null;
  declare problem: string;
  private seq = 0;

  constructor() {
    super();
    this.tiers = {};
    this.tier = '';
    this.data = null;
    this.problem = '';
  }

  override updated(changed: PropertyValues<this>): void {
    // new tiers arrive with every overview refresh: show the current page afresh
    if (changed.has('tiers')) void this.load(this.data?.page ?? 0);
  }

  private async load(page: number): Promise<void> {
    const seq = ++this.seq; // a slow older answer must not overwrite a newer one
    const q = new URLSearchParams({ tier: this.tier, page: String(page) });
    try {
      const d = await api<SandboxPage>(`/admin/api/sandboxes?${q}`);
      if (seq !== this.seq) return;
      this.data = d;
      this.problem = '';
    } catch (e) {
      if (seq === this.seq) this.problem = (e as Error).message;
    }
  }

  private filter(e: Event): void {
    this.tier = (e.target as HTMLSelectElement).value;
    void this.load(0);
  }

  override render() {
    const d = this.data;
    return html`
      <div class="card">
        <div class="bar">
          <h2>Sandboxes</h2>
          <label>Tier
            <select id="tier" @change=${(e: Event) => this.filter(e)}>
              <option value="" ?selected=${this.tier === ''}>All tiers</option>
              ${Object.entries(this.tiers).map(([t, n]) => html`<option value=${t} ?selected=${this.tier === t}>${t} (${n}/min)</option>`)}
            </select>
          </label>
        </div>
        ${this.problem ? html`<p class="error">${this.problem}</p>` : nothing}
        ${d
          ? html`
              <table>
                <thead><tr><th>Name</th><th>Tier</th><th class="num">Limit/min</th><th class="num">Services</th><th>Location</th><th>Created</th></tr></thead>
                <tbody>
                  ${d.items.map(
                    (s) => html`<tr>
                      <td><a href="#/sandbox/${s.uuid}" data-uuid=${s.uuid}>${s.name}</a></td>
                      <td><span class="tier ${s.tier}">${s.tier}</span></td>
                      <td class="num">${s.rateLimit}</td>
                      <td class="num">${s.serviceCount ?? 0}</td>
                      <td>${s.location ? `${s.location.lat.toFixed(2)}, ${s.location.lon.toFixed(2)}` : '—'}</td>
                      <td>${new Date(s.createdAt).toLocaleString('en-GB')}</td>
                    </tr>`,
                  )}
                  ${d.items.length === 0 ? html`<tr><td colspan="6" class="muted">No sandboxes here.</td></tr>` : nothing}
                </tbody>
              </table>
              <nav>
                <button class="secondary" id="prev" ?disabled=${!d.hasPrev} @click=${() => d.prevPage !== null && void this.load(d.prevPage)}>‹ Previous</button>
                <span id="page-label">Page ${d.displayPage} · ${d.total} sandbox${d.total === 1 ? '' : 'es'}</span>
                <button class="secondary" id="next" ?disabled=${!d.hasNext} @click=${() => d.nextPage !== null && void this.load(d.nextPage)}>Next ›</button>
              </nav>
            `
          : html`<p class="muted">Loading…</p>`}
      </div>
    `;
  }

  static override styles = [
    shared,
    css`
      :host {
        display: block;
      }
      .bar {
        display: flex;
        justify-content: space-between;
        align-items: baseline;
        gap: 1rem;
      }
      label {
        font-size: 0.9rem;
      }
      table {
        width: 100%;
        border-collapse: collapse;
        font-size: 0.93rem;
      }
      th,
      td {
        text-align: left;
        padding: 0.45rem 0.5rem;
        border-bottom: 1px solid #edf0f3;
      }
      th {
        font-size: 0.8rem;
        color: #5d6976;
        font-weight: 600;
      }
      .num {
        text-align: right;
      }
      a {
        color: #2457a6;
        text-decoration: none;
        font-weight: 500;
      }
      a:hover {
        text-decoration: underline;
      }
      nav {
        display: flex;
        align-items: center;
        justify-content: center;
        gap: 1rem;
        margin-top: 0.8rem;
      }
    `,
  ];
}

declare global {
  interface HTMLElementTagNameMap {
    'sandbox-list': SandboxList;
  }
}
customElements.define('sandbox-list', SandboxList);
