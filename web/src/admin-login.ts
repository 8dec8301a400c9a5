// <admin-login>: trades the admin API key for a session cookie (POST /admin/session) and
// hands the CSRF token up in a `logged-in` event. The key is not kept anywhere.
import { LitElement, css, html, nothing } from 'lit';
import { api, HttpError } from './lib/api.js';
import { shared } from './lib/theme.js';

export class AdminLogin extends LitElement {
  static override properties = {
    busy: { state: true },
    problem: { state: true },
  };

  declare busy: boolean;
  declare problem: string;

  constructor() {
    super();
    this.busy = false;
    this.problem = '';
  }

  private async submit(e: SubmitEvent): Promise<void> {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const input = form.elements.namedItem('apiKey') as HTMLInputElement;
    this.busy = true;
    this.problem = '';
    try {
      const r = await api<{ csrfToken: string }>('/admin/session', { method: 'POST', body: { apiKey: input.value } });
      input.value = '';
      this.dispatchEvent(new CustomEvent<string>('logged-in', { detail: r.csrfToken, bubbles: true, composed: true }));
    } catch (err) {
      this.problem = err instanceof HttpError && err.status === 401 ? 'That key is not the admin key.' : `Login failed: ${(err as Error).message}`;
    } finally {
      this.busy = false;
    }
  }

  override render() {
    return html`
      <form class="card" @submit=${(e: SubmitEvent) => void this.submit(e)}>
        <h1>Service registry</h1>
        <p class="muted">Administration. Sign in with the admin API key.</p>
        <label for="key">Admin API key</label>
        <input id="key" name="apiKey" type="password" autocomplete="current-password" required ?disabled=${this.busy} />
        ${this.problem ? html`<p class="error" role="alert">${this.problem}</p>` : nothing}
        <button type="submit" ?disabled=${this.busy}>Sign in</button>
      </form>
    `;
  }

  static override styles = [
    shared,
    css`
      :host {
        display: grid;
        place-items: center;
        min-height: 100vh;
        background: #16283f;
      }
      form {
        display: grid;
        gap: 0.7rem;
        width: min(380px, 90vw);
        padding: 1.8rem;
      }
      h1 {
        margin: 0;
        font-size: 1.4rem;
      }
      p {
        margin: 0;
      }
      label {
        font-weight: 600;
        font-size: 0.9rem;
      }
    `,
  ];
}

declare global {
  interface HTMLElementTagNameMap {
    'admin-login': AdminLogin;
  }
}
customElements.define('admin-login', AdminLogin);
