// <tier-form>: promote (or demote) a sandbox. POST /admin/api/sandboxes/{uuid}/tier with
// the CSRF token (lib/api.ts adds it); on success a `tier-changed` event carries the new
// summary, so the page shows the new limit at once.
import { LitElement, css, html, nothing } from 'lit';
import { api } from './lib/api.js';
import { shared } from './lib/theme.js';
import type { SandboxSummary } from './lib/types.js';

export class TierForm extends LitElement {
  static override properties = {
    uuid: { type: String },
    tier: { type: String },
    tiers: { attribute: false },
    choice: { state: true },
    busy: { state: true },
    message: { state: true },
    problem: { state: true },
  };

  declare uuid: string;
  /** the sandbox's current tier */
  declare tier: string;
  declare tiers: Record<string, number>;
  declare choice: string;
  declare busy: boolean;
  declare message: string;
  declare problem: string;

  constructor() {
    super();
    this.uuid = '';
    this.tier = '';
    this.tiers = {};
    this.choice = '';
    this.busy = false;
    this.message = '';
    this.problem = '';
  }

  private async submit(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    const tier = this.choice || this.tier;
    this.busy = true;
    this.problem = '';
    this.message = '';
    try {
      const s = await api<SandboxSummary>(`/admin/api/sandboxes/${encodeURIComponent(this.uuid)}/tier`, { method: 'POST', body: { tier } });
      this.tier = s.tier;
      this.choice = '';
      this.message = `Now ${s.tier}: ${s.rateLimit} requests per minute.`;
      this.dispatchEvent(new CustomEvent<SandboxSummary>('tier-changed', { detail: s, bubbles: true, composed: true }));
    } catch (err) {
      this.problem = `Could not change the tier: ${(err as Error).message}`;
    } finally {
      this.busy = false;
    }
  }

  override render() {
    const selected = this.choice || this.tier;
    const limit = this.tiers[selected];
    return html`
      <form @submit=${(e: SubmitEvent) => void this.submit(e)}>
        <label>New tier
          <select id="new-tier" @change=${(e: Event) => (this.choice = (e.target as HTMLSelectElement).value)} ?disabled=${this.busy}>
            ${Object.entries(this.tiers).map(([t, n]) => html`<option value=${t} ?selected=${t === selected}>${t} — ${n}/min</option>`)}
          </select>
        </label>
        <button type="submit" id="apply-tier" ?disabled=${this.busy || selected === this.tier}>Change tier</button>
        ${limit !== undefined && selected !== this.tier ? html`<span class="muted">limit becomes ${limit} requests per minute</span>` : nothing}
      </form>
      ${this.message ? html`<p class="ok" role="status">${this.message}</p>` : nothing}
      ${this.problem ? html`<p class="error" role="alert">${this.problem}</p>` : nothing}
    `;
  }

  static override styles = [
    shared,
    css`
      :host {
        display: block;
      }
      form {
        display: flex;
        flex-wrap: wrap;
        align-items: center;
        gap: 0.7rem;
      }
      .ok {
        color: #1e7a3c;
        margin: 0.6rem 0 0;
      }
    `,
  ];
}

declare global {
  interface HTMLElementTagNameMap {
    'tier-form': TierForm;
  }
}
customElements.define('tier-form', TierForm);
