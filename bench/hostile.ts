// Hostile load (issue 20): one address attacks, another is timed. Three scenarios, each
// printing the legitimate client's p50/p99 idle and under attack (alternated: idle, attack,
// idle again) and the server's (and nginx's) RSS before and after:
//   proxy   2,000 slow-body sockets (POST /sandboxes, Content-Length 60000, one byte every
//           4 s) and 1,000 change-feed streams from 127.0.0.2 through the shipped nginx,
//           127.0.0.3 searching through it
//   feed    1,000 change-feed streams from 127.0.0.2 straight at the server
//   keys    forged checksum-valid keys (a new one per request) from 127.0.0.2, with
//           PostgreSQL's scan counters of `sandboxes` read before and after
//   hop     the reference for keys: unknown service ids, no key, one Redis round trip each
//   batch   anonymous senders of 3.4 MB batches (1,000 registrations) to a sandbox's batch
//           route with no key, a malformed one or a new forged one, with the server's CPU
// Loopback addresses only; every count and duration is bounded (flags below). Needs
// DATABASE_URL and REDIS_URL (.local/env.sh) and an open-files limit above the socket count
// (`ulimit -n 8192`). Usage:
//   node dist/bench/hostile.js [--scenarios proxy,feed,keys,hop,batch] [--seconds S] [--slow N] [--streams N] [--forged N] [--senders N]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ATTACKER, Attack, bodyFlood, FEED, flood, openMany, SLOW_BODY } from './hostile-attack.js';
import { CLIENT, probe, showProbes } from './hostile-probe.js';
import { jiffies, rssKb, TICK, treeRssKb } from './proc-stat.js';
import { freePort, spawnNode, waitFor200, type Child } from './procs.js';
import { newSandboxKey } from '../src/hot/sandboxes/keys.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const SCENARIOS = arg('scenarios', 'proxy,feed,keys,hop,batch').split(',');
const SECONDS = Math.min(30, Number(arg('seconds', '5')));
const SLOW = Math.min(5000, Number(arg('slow', '2000')));
const STREAMS = Math.min(5000, Number(arg('streams', '1000')));
const FORGED = Math.min(200_000, Number(arg('forged', '30000')));
const SENDERS = Math.min(64, Number(arg('senders', '8')));
const ADMIN_KEY = 'hostile-bench-admin-key-0123456789';

const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

async function main(): Promise<void> {
  const port = await freePort();
  // nginx on the server's proxy socket, as `make run` + `make proxy`
  const sockets = mkdtempSync(join(tmpdir(), 'hostile-sock-'));
  const env: Record<string, string> = {
    PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: '0', WORKERS: '1', NODE_ENV: 'development', COOKIE_SECURE: 'false',
    ADMIN_API_KEY: ADMIN_KEY, PROXY_SOCKET_DIR: sockets, REDIS_KEY_PREFIX: 'hostile:', LOG_LEVEL: 'warn',
  };
  const server: Child = spawnNode(join(ROOT, 'dist/src/hot/main.js'), [], env, null, join(tmpdir(), 'hostile-server.log'));
  let nginx: ChildProcess | null = null;
  const prefix = mkdtempSync(join(tmpdir(), 'hostile-proxy-'));
  try {
    await waitFor200(`http://127.0.0.1:${port}/readyz`, server, 120_000);
    for (let i = 0; i < 4; i++) {
      await fetch(`http://127.0.0.1:${port}/admin/api/services`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ endpoint: `https://b${i}.example.com`, capability: `bench${i}` }) });
    }
    const pid = server.proc.pid!;
    console.log(`hostile bench: ${new Date().toISOString()}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}, server pid ${pid}, ${SECONDS} s per probe`);

    if (SCENARIOS.includes('proxy')) {
      const pport = await freePort();
      nginx = spawn('bash', ['scripts/proxy.sh', 'run'], { cwd: ROOT, env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), PROXY_PORT: String(pport), PROXY_PREFIX: prefix, PROXY_SOCKET_DIR: sockets }, stdio: ['ignore', 'ignore', 'inherit'] });
      for (let i = 0; i < 200; i++) {
        const ok = await fetch(`http://127.0.0.1:${pport}/livez`).then((r) => r.ok, () => false);
        if (ok) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const idle = await probe(pport, SECONDS);
      const rss0 = rssKb(pid);
      const nrss0 = treeRssKb(nginx.pid!);
      // the streams first: opened after the slow bodies they would find the address's
      // connections all taken, and only test the per-address connection cap again
      const f = new Attack();
      await openMany(f, pport, STREAMS, FEED, false);
      const a = new Attack();
      await openMany(a, pport, SLOW, SLOW_BODY, true);
      await new Promise((r) => setTimeout(r, 1000));
      const hit = await probe(pport, SECONDS);
      const rss1 = rssKb(pid);
      const nrss1 = treeRssKb(nginx.pid!);
      const slow = a.summary();
      const feed = f.summary();
      a.end();
      f.end();
      await new Promise((r) => setTimeout(r, 1000));
      const after = await probe(pport, SECONDS);
      console.log(`\n[proxy] ${SLOW} slow-body sockets + ${STREAMS} change-feed streams from ${ATTACKER} through nginx; ${CLIENT} searches through it`);
      showProbes(idle, hit, after);
      console.log(`  slow bodies:   ${JSON.stringify(slow)}; streams: ${JSON.stringify(feed)}`);
      console.log(`  RSS server ${mb(rss0)} -> ${mb(rss1)}, nginx (all processes) ${mb(nrss0)} -> ${mb(nrss1)}`);
    }

    if (SCENARIOS.includes('feed')) {
      const idle = await probe(port, SECONDS);
      const rss0 = rssKb(pid);
      const f = new Attack();
      await openMany(f, port, STREAMS, FEED, false);
      await new Promise((r) => setTimeout(r, 1000));
      const hit = await probe(port, SECONDS);
      const rss1 = rssKb(pid);
      const feed = f.summary();
      f.end();
      await new Promise((r) => setTimeout(r, 1000));
      const after = await probe(port, SECONDS);
      console.log(`\n[feed] ${STREAMS} change-feed streams from ${ATTACKER} straight at the server; ${CLIENT} searches`);
      showProbes(idle, hit, after);
      console.log(`  streams:       ${JSON.stringify(feed)}`);
      console.log(`  RSS server ${mb(rss0)} -> ${mb(rss1)}`);
    }

    if (SCENARIOS.includes('keys')) {
      const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await db.connect();
      const scans = async () => {
        await new Promise((r) => setTimeout(r, 1500)); // backends publish their counters about once a second
        const r = await db.query<{ n: string }>("SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) AS n FROM pg_stat_user_tables WHERE relname = 'sandboxes'");
        return Number(r.rows[0]?.n ?? 0);
      };
      // made before the flood: a key costs ~120 µs to make, which would slow this process
      // (the timed client's too) rather than the server
      const forged = Array.from({ length: FORGED }, () => newSandboxKey('forged').key);
      const idle = await probe(port, SECONDS);
      const rss0 = rssKb(pid);
      const s0 = await scans();
      const floodDone = flood(port, Date.now() + SECONDS * 1000 + 500, (i) => (i < forged.length ? { path: '/services?capability=bench0', headers: { authorization: `Bearer ${forged[i]!}` } } : null));
      const hit = await probe(port, SECONDS);
      const { sent, statuses } = await floodDone;
      const rss1 = rssKb(pid);
      const s1 = await scans();
      const after = await probe(port, SECONDS);
      await db.end();
      console.log(`\n[keys] forged checksum-valid keys (a new one per request, at most ${FORGED}, 32 connections) from ${ATTACKER}; ${CLIENT} searches`);
      showProbes(idle, hit, after);
      console.log(`  forged:        ${sent} requests ${JSON.stringify(statuses)}; PostgreSQL scans of sandboxes: ${s1 - s0}`);
      console.log(`  RSS server ${mb(rss0)} -> ${mb(rss1)}`);
    }
    if (SCENARIOS.includes('hop')) {
      // the reference for keys: the same flood, no key at all, each request one Redis round
      // trip (GET /services/<unknown id>: 404 from the index)
      const idle = await probe(port, SECONDS);
      const floodDone = flood(port, Date.now() + SECONDS * 1000 + 500, (i) => ({ path: `/services/nope${i}` }));
      const hit = await probe(port, SECONDS);
      const { sent, statuses } = await floodDone;
      const after = await probe(port, SECONDS);
      console.log(`\n[hop] unknown service ids (no key; one Redis round trip each, 32 connections) from ${ATTACKER}; ${CLIENT} searches`);
      showProbes(idle, hit, after);
      console.log(`  flood:         ${sent} requests ${JSON.stringify(statuses)}`);
    }
    if (SCENARIOS.includes('batch')) {
      const made = await fetch(`http://127.0.0.1:${port}/sandboxes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'hostile batch' }) });
      const { uuid } = (await made.json()) as { uuid: string };
      // a batch a real client could send: 1,000 valid registrations, ~3.4 MB
      const body = Buffer.from(JSON.stringify({ services: Array.from({ length: 1000 }, (_, i) => ({ endpoint: `https://batch${i}.example.com/${'p'.repeat(3300)}`, capabilities: ['flood', `n${i}`] })) }));
      const forged = Array.from({ length: 3000 }, () => newSandboxKey('forged').key); // made before: ~120 µs each
      const auth = (i: number) => (i % 3 === 0 ? '' : i % 3 === 1 ? 'Authorization: Bearer not-a-key\r\n' : `Authorization: Bearer ${forged[i % forged.length]!}\r\n`);
      const head = (i: number) => `POST /sandbox/${uuid}/services/batch HTTP/1.1\r\nHost: registry\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${auth(i)}\r\n`;
      const idle = await probe(port, SECONDS);
      const j0 = jiffies(pid);
      const t0 = performance.now();
      const floodDone = bodyFlood(port, Date.now() + SECONDS * 1000 + 500, SENDERS, head, body);
      const hit = await probe(port, SECONDS);
      const { sent, statuses } = await floodDone;
      const cpu = (jiffies(pid) - j0) / TICK;
      const secs = (performance.now() - t0) / 1000;
      const after = await probe(port, SECONDS);
      console.log(`\n[batch] ${SENDERS} senders from ${ATTACKER} of ${(body.length / 1e6).toFixed(1)} MB batches (1,000 registrations; no key, malformed, forged in turn), a new connection each; ${CLIENT} searches`);
      showProbes(idle, hit, after);
      console.log(`  batches:       ${sent} sent ${JSON.stringify(statuses)}; server CPU ${cpu.toFixed(2)} s in ${secs.toFixed(1)} s (${((cpu * 1000) / Math.max(1, sent)).toFixed(2)} ms a batch, the timed client's searches included)`);
    }
    console.log(`\nload average at the end ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  } finally {
    if (nginx && nginx.exitCode === null) {
      nginx.kill('SIGTERM');
      await new Promise((r) => nginx!.once('exit', r));
    }
    await server.stop();
    rmSync(prefix, { recursive: true, force: true });
    rmSync(sockets, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
