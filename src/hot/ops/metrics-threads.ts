// GET /metrics across threads: the thread that answers a scrape asks the other serving
// threads for their registries over a BroadcastChannel and merges them with
// AggregatorRegistry.aggregate(), so a scrape shows the whole process whichever thread the
// kernel handed the connection to.
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { registry } from './metrics.js';

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

let channel: BroadcastChannel | null = null;
let peers = 1;
const pending = new Map<string, (data: ReplyMsg['data']) => void>();

/**
 * Join the scrape channel: call once per serving thread, with the number of serving
 * threads of the process. With one thread nothing is set up.
 */
export function joinAggregation(serving: number): void {
  peers = serving;
  if (serving <= 1 || channel) return;
  const ch = new BroadcastChannel(CHANNEL);
  ch.unref();
  ch.onmessage = (ev: unknown) => {
    const m = (ev as { data: CollectMsg | ReplyMsg }).data;
    if (m.t === 'collect' && m.from !== threadId) {
      void registry.getMetricsAsJSON().then((data) => ch.postMessage({ t: 'metrics', id: m.id, to: m.from, data } satisfies ReplyMsg));
    } else if (m.t === 'metrics' && m.to === threadId) {
      pending.get(m.id)?.(m.data);
    }
  };
  channel = ch;
}

export function leaveAggregation(): void {
  channel?.close();
  channel = null;
  peers = 1;
}

/** The Prometheus text of every serving thread of this process. */
export async function scrape(): Promise<{ contentType: string; body: string }> {
  if (!channel) return { contentType: registry.contentType, body: await registry.metrics() };
  const ch = channel;
  const parts = [await registry.getMetricsAsJSON()];
  const id = randomBytes(8).toString('hex');
  await new Promise<void>((resolve) => {
    const t = setTimeout(resolve, WAIT_MS);
    pending.set(id, (data) => {
      parts.push(data);
      if (parts.length >= peers) {
        clearTimeout(t);
        resolve();
      }
    });
    ch.postMessage({ t: 'collect', id, from: threadId } satisfies CollectMsg);
  });
  pending.delete(id);
  const merged = AggregatorRegistry.aggregate(parts);
  return { contentType: merged.contentType, body: await merged.metrics() };
}
