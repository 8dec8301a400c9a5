// Entry point: validate configuration, refuse uWebSockets.js's slow fallback unless told,
// migrate, then serve on WORKERS uWS threads sharing the port (SO_REUSEPORT), each with its
// own connections. SIGTERM drains gracefully.
import { Worker, isMainThread, workerData, parentPort } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, ConfigError, redactUrl, type Config } from './config.js';
import { checkUwsNative } from './native.js';
import { createApp, closeApp, createLogger } from './app.js';
import { startServer } from './server.js';
import { createPool } from './store/pool.js';
import { migrate } from './store/migrator.js';
import { ROOT } from './paths.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

async function serveThread(cfg: Config, index: number): Promise<void> {
  const log = createLogger(cfg, { thread: index });
  const app = createApp(cfg, VERSION, log);
  const server = await startServer(app);
  parentPort?.postMessage({ type: 'listening', port: server.port });
  const stop = async () => {
    await server.close();
    await closeApp(app);
    process.exit(0);
  };
  if (parentPort) parentPort.on('message', (m: { type: string }) => m.type === 'stop' && void stop());
  else {
    process.once('SIGTERM', () => void stop());
    process.once('SIGINT', () => void stop());
  }
}

async function main(): Promise<void> {
  let cfg: Config;
  try {
    cfg = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`configuration error: ${e.message}`);
      process.exit(2);
    }
    throw e;
  }
  const uws = checkUwsNative();
  if (!uws.native) {
    if (!cfg.allowUwsFallback) {
      console.error(`refusing to start: ${uws.reason}.\nThe JavaScript fallback is many times slower. Set ALLOW_UWS_FALLBACK=true to start anyway.`);
      process.exit(3);
    }
    console.error(`WARNING: serving with the slow uWebSockets.js fallback: ${uws.reason}`);
  }
  const log = createLogger(cfg);
  const pool = createPool(cfg.databaseUrl, 2);
  try {
    await migrate(pool, (m) => log.info(m));
  } catch (e) {
    console.error(`cannot migrate ${redactUrl(cfg.databaseUrl)}: ${(e as Error).message}`);
    process.exit(4);
  } finally {
    await pool.end();
  }
  if (cfg.port === 0 && cfg.workers > 1) cfg = { ...cfg, workers: 1 }; // an ephemeral port cannot be shared
  const banner = (port: number) => {
    const base = `http://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${port}`;
    console.log(`service registry ${VERSION} listening on ${base} (${cfg.workers} uWS thread${cfg.workers > 1 ? 's' : ''})`);
    console.log(`  search:     ${base}/services`);
    console.log(`  openapi:    ${base}/openapi.json`);
    console.log(`  dashboard:  ${base}/admin/`);
    console.log(`  admin key:  ${cfg.adminApiKeyGenerated ? cfg.adminApiKey + '  (generated for this run; set ADMIN_API_KEY to fix it)' : '(from ADMIN_API_KEY)'}`);
  };
  if (cfg.workers === 1) {
    await serveThread(cfg, 0);
    banner(cfg.port || 0);
    return;
  }
  const workers: Worker[] = [];
  let listening = 0;
  for (let i = 0; i < cfg.workers; i++) {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { cfg, index: i } });
    w.on('message', (m: { type: string; port: number }) => {
      if (m.type === 'listening' && ++listening === cfg.workers) banner(m.port);
    });
    w.on('error', (err) => {
      console.error(`worker ${i} failed: ${err.message}`);
      process.exit(1);
    });
    workers.push(w);
  }
  const stop = () => {
    for (const w of workers) w.postMessage({ type: 'stop' });
    setTimeout(() => process.exit(0), cfg.shutdownGraceMs + 1000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (isMainThread) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
} else {
  const d = workerData as { cfg: Config; index: number };
  serveThread(d.cfg, d.index).catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
