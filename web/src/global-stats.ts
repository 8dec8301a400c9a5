// <global-stats>: the registry at a glance, from GET /admin/api/stats (loaded by the app).
import { LitElement, css, html } from 'lit';
import { shared } from './lib/theme.js';
import type { Stats } from './lib/types.js';

const fmt = new Intl.NumberFormat('en');

export class GlobalStats extends LitElement {
  static override properties = { stats: { attribute: false } };

  declare stats: Stats | null;

  constructor() {
    super();
    this.stats = null;
  }

  private tile(label: string, value: number, sub = '') {
    return html`<div class="tile"><span class="label">${label}</span><span class="value">${fmt.format(value)}</span><span class="muted">${sub}</span></div>`;
  }

  override render() {
    const s = this.stats;
    if (!s) return html`<div class="card muted">Loading statistics…</div>`;
    const both = (x: { production: number; sandboxes: number }) => `${fmt.format(x.production)} production · ${fmt.format(x.sandboxes)} sandbox`;
    return html`
      <div class="card">
        <h2>Registry</h2>
        <div class="tiles">
          ${this.tile('Production services', s.services.production)}
          ${this.tile('Sandbox services', s.services.sandboxes)}
          ${this.tile('Sandboxes', s.sandboxes, Object.entries(s.sandboxesByTier).map(([t, n]) => `${t} ${fmt.format(n)}`).join(' · '))}
          ${this.tile('Deprecated', s.deprecated.production + s.deprecated.sandboxes, both(s.deprecated))}
          ${this.tile('Locked', s.locked.production + s.locked.sandboxes, both(s.locked))}
          ${this.tile('IoT-ready', s.iotReady.production + s.iotReady.sandboxes, both(s.iotReady))}
          ${this.tile('Passing', s.health.passing.production + s.health.passing.sandboxes, both(s.health.passing))}
          ${this.tile('Critical', s.health.critical.production + s.health.critical.sandboxes, both(s.health.critical))}
          ${this.tile('Health unknown', s.health.unknown.production + s.health.unknown.sandboxes, 'no lease: ' + both(s.health.unknown))}
          ${this.tile('Sandbox requests', s.requests.total, `${fmt.format(s.requests.rejected)} rejected (429)`)}
        </div>
        <p class="muted tiers">Tiers: ${Object.entries(s.tiers).map(([t, n]) => `${t} = ${fmt.format(n)}/min`).join(' · ')}</p>
      </div>
    `;
  }

  static override styles = [
    shared,
    css`
      :host {
        display: block;
      }
      .tiles {
        display: grid;
        grid-template-columns: repeat(auto-fit, minmax(150px, 1fr));
        gap: 0.8rem;
      }
      .tile {
        display: grid;
        gap: 0.15rem;
        padding: 0.7rem 0.8rem;
        border-radius: 8px;
        background: #f6f8fb;
      }
      .label {
        font-size: 0.85rem;
        color: #4a5663;
      }
      .value {
        font-size: 1.6rem;
        font-weight: 600;
      }
      .tiers {
        margin: 0.8rem 0 0;
      }
    `,
  ];
}

declare global {
  interface HTMLElementTagNameMap {
    'global-stats': GlobalStats;
  }
}
customElements.define('global-stats', GlobalStats);
