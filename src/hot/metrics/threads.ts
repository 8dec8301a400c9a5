// GET /metrics across threads: the thread that answers a scrape asks the other serving
// threads for their registries over a BroadcastChannel and merges them with
// AggregatorRegistry.aggregate(), so a scrape shows the whole process whichever thread the
// kernel handed the connection to.
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { Sampler } from './metrics.js';
import { registry } from './registry.js';

const CHANNEL = 'service-registry:metrics';
const WAIT_MS = 1000; // a thread busy for longer than this is left out (registry_threads_reporting shows it)

interface CollectMsg {
  t: 'collect';
  id: string;
  from: number;
}
interface ReplyMsg {
  t: 'metrics';
  id: string;
  to: number;
  data: MetricObjectWithValues<MetricValue<string>>[];
}

/**
 * One per serving thread (built by the composition root): with more than one serving
 * thread it joins the scrape channel at start() and answers the other threads' requests
 * with its own registry; scrape() gives the whole process.
 */
export class MetricsAggregation {
  private channel: BroadcastChannel | null = null;
  private readonly pending = new Map<string, (data: ReplyMsg['data']) => void>();

  constructor(
    /** serving threads of the process (cfg.uwsThreads) */
    private readonly peers: number,
    /** the thread's parts' samplers (each feature's metrics module makes its own) */
    private readonly samplers: readonly Sampler[],
  ) {}

  /** Copy the thread's current values into the metrics that mirror them. */
  private async sample(): Promise<void> {
    for (const s of this.samplers) await s();
  }

  private async own(): Promise<ReplyMsg['data']> {
    await this.sample();
    return registry.getMetricsAsJSON();
  }

  start(): void {
    if (this.peers <= 1 || this.channel) return;
    const ch = new BroadcastChannel(CHANNEL);
    ch.unref();
    ch.onmessage = (ev: unknown) => {
      const m = (ev as { data: CollectMsg | ReplyMsg }).data;
      if (m.t === 'collect' && m.from !== threadId) {
        void this.own().then((data) => ch.postMessage({ t: 'metrics', id: m.id, to: m.from, data } satisfies ReplyMsg));
      } else if (m.t === 'metrics' && m.to === threadId) {
        this.pending.get(m.id)?.(m.data);
      }
    };
    this.channel = ch;
  }

  stop(): void {
    this.channel?.close();
    this.channel = null;
  }

  /** The Prometheus text of every serving thread of this process. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    if (!this.channel) {
      await this.sample();
      return { contentType: registry.contentType, body: await registry.metrics() };
    }
    const ch = this.channel;
    const parts = [await this.own()];
    const id = randomBytes(8).toString('hex');
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, WAIT_MS);
      this.pending.set(id, (data) => {
        parts.push(data);
        if (parts.length >= this.peers) {
          clearTimeout(t);
          resolve();
        }
      });
      ch.postMessage({ t: 'collect', id, from: threadId } satisfies CollectMsg);
    });
    this.pending.delete(id);
    const merged = AggregatorRegistry.aggregate(parts);
    return { contentType: merged.contentType, body: await merged.metrics() };
  }
}
