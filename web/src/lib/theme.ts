// Styles shared by the dashboard's elements (each adopts them in its static styles; shadow
// DOM keeps everything else out).
import { css } from 'lit';

export const shared = css`
  :host {
    font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
    color: #1d2733;
    box-sizing: border-box;
  }
  *,
  *::before,
  *::after {
    box-sizing: inherit;
  }
  button,
  select,
  input {
    font: inherit;
    padding: 0.4rem 0.7rem;
    border: 1px solid #b8c2cc;
    border-radius: 6px;
    background: #fff;
    color: inherit;
  }
  button {
    cursor: pointer;
    background: #2457a6;
    border-color: #2457a6;
    color: #fff;
  }
  button.secondary {
    background: #fff;
    color: #2457a6;
  }
  button:disabled {
    opacity: 0.45;
    cursor: default;
  }
  .card {
    background: #fff;
    border: 1px solid #dde3ea;
    border-radius: 10px;
    padding: 1rem 1.2rem;
  }
  h2 {
    font-size: 1.05rem;
    margin: 0 0 0.8rem;
  }
  .muted {
    color: #66727f;
    font-size: 0.9em;
  }
  .error {
    color: #b3261e;
  }
  .tier {
    display: inline-block;
    padding: 0.05rem 0.5rem;
    border-radius: 999px;
    font-size: 0.85em;
    background: #e8eef8;
    color: #2457a6;
  }
  .tier.pro {
    background: #e6f4ea;
    color: #1e7a3c;
  }
  .tier.enterprise {
    background: #fbeee0;
    color: #9a4b00;
  }
`;
