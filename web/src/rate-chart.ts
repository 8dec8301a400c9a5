// <rate-chart>: a sandbox's live request rate. Polls GET /sandbox/{uuid}/poll (every 1 s
// while traffic flows, every 5 s after 15 s without: lib/cadence.ts) and plots the 72
// five-second buckets with uPlot as requests per minute, capped at the limit (lib/rate.ts).
// x: -6m, -3m, now; y: 0 / 50 / 100 % of the limit. The label above shows the rate
// accumulated in the current window, which may exceed 100 %.
import { LitElement, css, html, unsafeCSS, type PropertyValues } from 'lit';
import uPlot from 'uplot';
import uplotCss from 'uplot/dist/uPlot.min.css?inline';
import { PollCadence } from './lib/cadence.js';
import { bucketXs, chartSeries, percentOfLimit, rateLabel, windowRate, X_RANGE, X_TICKS, yTicks } from './lib/rate.js';
import { shared } from './lib/theme.js';
import type { Poll } from './lib/types.js';

const HEIGHT = 220;

export class RateChart extends LitElement {
  static override properties = {
    uuid: { type: String },
    limit: { type: Number },
    rate: { state: true },
    cadenceMs: { state: true },
    offline: { state: true },
  };

  declare uuid: string;
  /** requests per minute at 100 %; the parent sets it at once after a tier change */
  declare limit: number;
  /** requests in the current window (last 12 buckets) */
  declare rate: number;
  declare cadenceMs: number;
  declare offline: boolean;
  /** what is plotted now, oldest first (req/min, capped): read by the browser tests */
  plotted: number[] = [];
  /** polls answered so far */
  polls = 0;

  private plot: uPlot | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private cadence = new PollCadence(Date.now());
  private buckets: number[] = [];
  private resize = new ResizeObserver(() => this.fit());
  private running = false;
  private aborter: AbortController | null = null;

  constructor() {
    super();
    this.uuid = '';
    this.limit = 0;
    this.rate = 0;
    this.cadenceMs = 1000;
    this.offline = false;
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.start();
  }

  override disconnectedCallback(): void {
    this.stop();
    this.resize.disconnect();
    this.plot?.destroy();
    this.plot = null;
    super.disconnectedCallback();
  }

  override firstUpdated(): void {
    const el = this.renderRoot.querySelector<HTMLElement>('.plot')!;
    this.plot = new uPlot(this.options(el.clientWidth || 600), [bucketXs(), chartSeries(this.buckets, this.limit)], el);
    this.resize.observe(el);
  }

  override updated(changed: PropertyValues<this>): void {
    if (changed.has('uuid') && changed.get('uuid') !== undefined) {
      this.stop();
      this.cadence = new PollCadence(Date.now());
      this.buckets = [];
      this.start();
    }
    if (changed.has('limit')) this.draw();
  }

  private start(): void {
    if (this.running || !this.uuid) return;
    this.running = true;
    void this.tick();
  }

  private stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.aborter?.abort();
  }

  private async tick(): Promise<void> {
    let delay: number;
    this.aborter = new AbortController();
    try {
      const r = await fetch(`/sandbox/${encodeURIComponent(this.uuid)}/poll`, { cache: 'no-store', signal: this.aborter.signal });
      if (!r.ok) throw new Error(`poll answered ${r.status}`);
      const p = (await r.json()) as Poll;
      const now = Date.now();
      this.cadence.observe(p.total, now);
      delay = this.cadence.delay(now);
      this.apply(p);
      this.offline = false;
    } catch {
      if (!this.running) return;
      delay = this.cadence.failedDelay();
      this.offline = true;
    }
    if (!this.running) return;
    this.cadenceMs = delay;
    this.timer = setTimeout(() => void this.tick(), delay);
  }

  private apply(p: Poll): void {
    this.polls++;
    this.buckets = p.buckets;
    this.limit = p.rateLimit;
    this.rate = windowRate(p.buckets);
    this.draw();
    this.dispatchEvent(new CustomEvent<Poll>('poll-data', { detail: p, bubbles: true, composed: true }));
  }

  private draw(): void {
    this.plotted = chartSeries(this.buckets, this.limit);
    // setData re-runs the scale and axis functions, which read the current limit
    this.plot?.setData([bucketXs(), this.plotted]);
  }

  private fit(): void {
    const el = this.renderRoot.querySelector<HTMLElement>('.plot');
    if (this.plot && el && el.clientWidth > 0 && el.clientWidth !== this.plot.width) this.plot.setSize({ width: el.clientWidth, height: HEIGHT });
  }

  private options(width: number): uPlot.Options {
    const yt = () => yTicks(this.limit || 1);
    return {
      width,
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: {
        x: { time: false, range: () => [X_RANGE[0], X_RANGE[1]] },
        y: { range: () => [0, this.limit || 1] },
      },
      axes: [
        { splits: () => X_TICKS.map((t) => t.value), values: () => X_TICKS.map((t) => t.label), grid: { show: false }, stroke: '#5d6976' },
        { splits: () => yt().map((t) => t.value), values: () => yt().map((t) => t.label), size: 56, grid: { stroke: '#e6eaef', width: 1 }, stroke: '#5d6976' },
      ],
      series: [{}, { label: 'req/min', stroke: '#2457a6', fill: 'rgba(36, 87, 166, 0.45)', width: 1, points: { show: false }, paths: uPlot.paths.bars!({ size: [0.85, 40] }) }],
    };
  }

  override render() {
    const pct = percentOfLimit(this.rate, this.limit);
    return html`
      <div class="head">
        <span class="live ${pct > 100 ? 'over' : ''}" data-rate=${this.rate} data-limit=${this.limit}>${rateLabel(this.rate, this.limit)}</span>
        <span class="muted cadence" data-cadence=${this.cadenceMs}>${this.offline ? 'poll failed; retrying every 5 s' : `updating every ${this.cadenceMs / 1000} s`}</span>
      </div>
      <div class="plot"></div>
    `;
  }

  static override styles = [
    shared,
    unsafeCSS(uplotCss),
    css`
      :host {
        display: block;
      }
      .head {
        display: flex;
        justify-content: space-between;
        align-items: baseline;
        flex-wrap: wrap;
        gap: 0.5rem;
        margin-bottom: 0.4rem;
      }
      .live {
        font-weight: 600;
        font-size: 1.05rem;
      }
      .live.over {
        color: #b3261e;
      }
      .plot {
        width: 100%;
        min-height: ${HEIGHT}px;
      }
    `,
  ];
}

declare global {
  interface HTMLElementTagNameMap {
    'rate-chart': RateChart;
  }
}
customElements.define('rate-chart', RateChart);
