// Entry point: validate configuration, refuse uWebSockets.js's slow fallback unless told,
// migrate (on a thread of its own: migrate-apart.ts), then serve on WORKERS uWS threads
// sharing the port (SO_REUSEPORT), each with its own connections. SIGTERM drains gracefully.
import { Worker, isMainThread, workerData, parentPort } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type Config } from './config.js';
import { ConfigError, redactUrl } from './config-env.js';
import { checkUwsNative } from './http/native.js';
import { createLogger } from './app.js';
import { buildThread, processShared, type ProcessShared } from './compose.js';
import { migrateApart } from './migrate-apart.js';
import { prepareSocketDir, proxySocketPath, removeStaleSockets } from './http/proxy-socket.js';
import { ROOT } from './paths.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * How long a draining thread keeps its port open, answering /readyz 503 (and closing each
 * connection after its answer), before it stops accepting: probes and balancers read "not
 * ready" instead of a refused connection while they take this server out of rotation.
 */
function listenPhaseMs(graceMs: number): number {
  return Math.min(2000, Math.floor(graceMs / 4));
}

/** Time kept back from the grace period to close the pools after the drain. */
const CLOSE_MS = 250;

/** the /metrics listener's and the DNS server's ports, once thread 0 listens (banner) */
let metricsPortSeen: number | null = null;
let dnsPortSeen: number | null = null;

/** Serve one uWS thread; resolves with the port it listens on (the real one when PORT=0). */
async function serveThread(cfg: Config, index: number, shared: ProcessShared): Promise<number> {
  const log = createLogger(cfg, { thread: index });
  // one /metrics listener and one DNS server per process; with PORT=0 thread 0 picks the port the others share
  const thread = buildThread(cfg, VERSION, log, { port: cfg.port, host: cfg.host, metrics: index === 0, dns: index === 0, sharePort: cfg.uwsThreads > 1, thread: index }, { shared });
  await thread.start();
  const server = thread.server;
  metricsPortSeen = thread.metricsPort() ?? metricsPortSeen;
  dnsPortSeen = thread.dnsPort() ?? dnsPortSeen;
  parentPort?.postMessage({ type: 'listening', port: server.port, metricsPort: thread.metricsPort(), dnsPort: thread.dnsPort() });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    const grace = cfg.shutdownGraceMs;
    log.info({ graceMs: grace, inflight: server.inflight() }, 'draining: /readyz answers 503, in-flight requests may finish');
    // whatever still hangs at the deadline (a client that never sends the rest of its body,
    // a pool that will not end) cannot keep this thread past its grace period
    const hard = setTimeout(() => {
      log.warn({ inflight: server.inflight() }, 'grace period over with requests still in flight; exiting');
      if (parentPort) parentPort.postMessage({ type: 'overdue' });
      else process.exit(1);
    }, grace);
    // every part in reverse order: the HTTP drain first, the pools last
    await thread.stop({ graceMs: Math.max(0, grace - CLOSE_MS), listenMs: listenPhaseMs(grace) });
    const left = server.inflight();
    clearTimeout(hard);
    log.info({ abandoned: left }, 'stopped: requests drained, pools closed');
    // A worker thread must not end itself: uWS keeps a poll handle on the thread's loop and
    // Node aborts (uv_loop_close with open handles). It reports instead; the main thread
    // exits the process once every thread has.
    if (parentPort) parentPort.postMessage({ type: 'stopped' });
    else process.exit(0);
  };
  if (parentPort) parentPort.on('message', (m: { type: string }) => m.type === 'stop' && void stop());
  else {
    const onSignal = () => (stopping ? process.exit(1) : void stop()); // a second signal: now
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  return server.port;
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
  // (a warning, not a refusal: a proxy on this host that cannot use the socket is a choice)
  if (cfg.trustedProxies.some((a) => a === '::1' || a.startsWith('127.'))) {
    console.error('WARNING: TRUSTED_PROXIES lists a loopback address: any process on this host that connects from it names its own client address. Put the proxy on PROXY_SOCKET_DIR instead.');
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
  try {
    await migrateApart(cfg.databaseUrl, (m) => log.info(m));
  } catch (e) {
    console.error(`cannot migrate ${redactUrl(cfg.databaseUrl)}: ${(e as Error).message}`);
    process.exit(4);
  }
  if (cfg.proxySocketDir) {
    try {
      prepareSocketDir(cfg.proxySocketDir); // each thread checks again as it listens
      removeStaleSockets(cfg.proxySocketDir); // of a run with more threads: the proxy would keep trying them
    } catch (e) {
      console.error(`configuration error: ${(e as Error).message}`);
      process.exit(2);
    }
  }
  const banner = (port: number) => {
    const base = `http://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${port}`;
    console.log(`service registry ${VERSION} listening on ${base} (${cfg.uwsThreads} uWS thread${cfg.uwsThreads > 1 ? 's' : ''})`);
    console.log(`  search:     ${base}/services`);
    console.log(`  openapi:    ${base}/openapi.json`);
    console.log(`  dashboard:  ${base}/admin/`);
    if (cfg.proxySocketDir) console.log(`  proxy:      ${proxySocketPath(cfg.proxySocketDir, 0).replace(/-0\.sock$/, '-*.sock')} (X-Forwarded-For believed there only${cfg.trustedProxies.length ? ' and from TRUSTED_PROXIES' : ''})`);
    if (metricsPortSeen !== null) console.log(`  metrics:    http://${cfg.metricsHost.includes(':') ? `[${cfg.metricsHost}]` : cfg.metricsHost}:${metricsPortSeen}/metrics`);
    if (cfg.dnsPort !== null) console.log(`  dns:        ${cfg.dnsHost}:${dnsPortSeen ?? cfg.dnsPort} (udp, tcp), zone ${cfg.dnsDomain}`);
    console.log(`  admin key:  ${cfg.adminApiKeyGenerated ? cfg.adminApiKey + '  (generated for this run; set ADMIN_API_KEY to fix it)' : '(from ADMIN_API_KEY)'}`);
  };
  if (cfg.uwsThreads === 1) {
    banner(await serveThread(cfg, 0, processShared()));
    return;
  }
  const workers: Worker[] = [];
  let listening = 0;
  let stopping = false;
  /** serving threads that ended on their own (a failure): the process then exits 1 */
  let failed = 0;
  // per-process caps (change streams) count on this shared memory, whatever the thread count
  const shared = processShared();
  // PORT=0 (an ephemeral port, as the tests use): thread 0 binds first and the others share
  // the port the kernel gave it (SO_REUSEPORT), instead of each thread getting a port of its
  // own; with a fixed PORT every thread starts at once
  let threadCfg = cfg;
  const startThread = (i: number) => {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { cfg: threadCfg, index: i, shared } });
    w.on('message', (m: { type: string; port: number; metricsPort?: number | null; dnsPort?: number | null }) => {
      if (m.type !== 'listening') return;
      if (m.metricsPort != null) metricsPortSeen = m.metricsPort;
      if (m.dnsPort != null) dnsPortSeen = m.dnsPort;
      if (i === 0 && threadCfg.port === 0) {
        threadCfg = { ...cfg, port: m.port };
        for (let k = 1; k < cfg.uwsThreads && !stopping; k++) startThread(k);
      }
      if (++listening === cfg.uwsThreads) banner(m.port);
    });
    w.on('error', (err) => {
      console.error(`worker ${i} failed: ${err.message}`);
      process.exit(1);
    });
    // A serving thread that fails (its start-up threw: it printed why and called
    // process.exit, which in a worker ends only that thread) must take the process down: else
    // the others serve on without it, or, before the banner, the process waits for a
    // 'listening' that never comes. Threads never end on their own otherwise (see stop()).
    // (the others drain and report first: a process.exit under a live uWS thread aborts)
    w.on('exit', (code) => {
      if (stopping && code === 0) return;
      console.error(`serving thread ${i} ended (exit code ${code}); stopping the process`);
      failed++;
      if (stopping) settled();
      else stop();
    });
    w.on('message', (m: { type: string }) => {
      if (m.type === 'stopped') drained++;
      else if (m.type === 'overdue') overdue++;
      else return;
      settled();
    });
    workers.push(w);
  };
  // SIGTERM reaches the main thread only: forward it to every serving thread; each drains
  // within the grace period, and the process exits when the last thread has, or at the
  // deadline whatever happens
  let drained = 0;
  let overdue = 0;
  const settled = () => {
    if (!stopping || drained + overdue + failed < workers.length) return;
    console.log(`stopped: ${drained} of ${workers.length} threads drained their requests and closed their pools`);
    process.exit(overdue || failed ? 1 : 0);
  };
  const stop = () => {
    if (stopping) process.exit(1); // a second signal: now
    stopping = true;
    for (const w of workers) w.postMessage({ type: 'stop' });
    settled(); // every thread already ended (thread 0 failed before the others started)
    setTimeout(() => {
      console.error(`shutdown: ${workers.length - drained} thread(s) still busy after ${cfg.shutdownGraceMs} ms; exiting`);
      process.exit(1);
    }, cfg.shutdownGraceMs + 100).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  for (let i = 0; i < (cfg.port === 0 ? 1 : cfg.uwsThreads); i++) startThread(i);
}

if (isMainThread) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
} else {
  const d = workerData as { cfg: Config; index: number; shared: ProcessShared };
  serveThread(d.cfg, d.index, d.shared).catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
