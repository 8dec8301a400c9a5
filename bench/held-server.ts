// The server of bench/held.ts's memory rows: one serving thread as main.ts builds it
// (compose.ts buildThread, the configuration from the environment), in a process started with
// --expose-gc by fork(), which answers the message "measure" with its memory after a full
// garbage collection: what the held requests keep alive, without the garbage their arrival left.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '../src/hot/app.js';
import { buildThread } from '../src/hot/compose.js';
import { loadConfig } from '../src/hot/config.js';
import { ROOT } from '../src/hot/paths.js';

export interface Measured {
  rss: number;
  heapUsed: number;
  external: number;
}

const cfg = loadConfig();
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const thread = buildThread(cfg, version, createLogger(cfg), { port: cfg.port, host: cfg.host, dns: false });
await thread.start();
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('start me with --expose-gc');
process.on('message', (m) => {
  if (m === 'measure') {
    gc();
    gc();
    const u = process.memoryUsage();
    process.send!({ rss: u.rss, heapUsed: u.heapUsed, external: u.external } satisfies Measured);
  } else if (m === 'stop') void thread.stop({ graceMs: 1000 }).then(() => process.exit(0));
});
process.send!('ready');
