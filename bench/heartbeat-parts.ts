// Where a heartbeat's throughput goes, part by part (issue 23, bench/README.md, Liveness,
// "Heartbeat row"). One in-process server and four bare uWS apps in this
// process, each loaded in turn by wrk (-t1, --connections, keep-alive) for --duration
// seconds, --rounds times, every rate taken over the ceiling run of its own round:
//
//   ceiling   bare uWS answering 204 at once
//   floor     bare uWS answering 204 once one Redis PING per event-loop turn came back
//   script    bare uWS, the thread's heartbeat batch (heartbeat-2.lua, the token's hash known)
//   lean      bare uWS, the token memory and Liveness.renew (the product's heartbeat, no route layer)
//   product   the server's PUT /services/{id}/heartbeat
//
//   node dist/bench/heartbeat-parts.js [--rounds R] [--duration S] [--connections C]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import uWS from 'uWebSockets.js';
import { registerProduction, startTestServer } from '../test/helpers/server.js';
import { PRODUCTION } from '../src/hot/domain/keys.js';
import { floorHandler } from './floor.js';
import { numArg as arg } from './args.js';
import { loadAverage } from './cpu.js';

const ROUNDS = arg('rounds', 6);
const DUR = arg('duration', 2);
const CONN = arg('connections', 50);

const s = await startTestServer({ hooks: { sweep: false } });
const dir = mkdtempSync('/tmp/hb-parts-');
try {
  const app = s.app;
  const svc = (await registerProduction(s, { endpoint: 'https://bench-parts.example.com', capability: 'bench', ttl: 60 })) as unknown as { id: string; heartbeatToken: string };
  const product = `${s.url}/services/${svc.id}/heartbeat`;
  // one heartbeat through the server: the thread's token memory knows the token from then on
  const first = await fetch(product, { method: 'PUT', headers: { authorization: `Bearer ${svc.heartbeatToken}` } });
  if (first.status !== 204) throw new Error(`first heartbeat: ${first.status}`);
  const look = app.heartbeatTokens.look(PRODUCTION, svc.id, svc.heartbeatToken);
  if (look.refused || !look.known) throw new Error('token not in memory');
  const hash = look.hash;

  const answer = (res: uWS.HttpResponse) => res.cork(() => void res.writeStatus('204 No Content').end());
  const handlers: Record<string, (res: uWS.HttpResponse, req: uWS.HttpRequest) => void> = {
    ceiling: (res) => void res.writeStatus('204 No Content').end(),
    floor: floorHandler(app.redis),
    script: (res, req) => {
      let gone = false;
      res.onAborted(() => (gone = true));
      app.liveness.batch.beat(PRODUCTION, req.getParameter(0)!, hash, 'p', false, (r) => {
        if (gone) return;
        if (r === 0) answer(res);
        else res.cork(() => void res.writeStatus('500 Internal Server Error').end());
      });
    },
    lean: (res, req) => {
      let gone = false;
      res.onAborted(() => (gone = true));
      const id = req.getParameter(0)!;
      const m = app.heartbeatTokens.look(PRODUCTION, id, req.getHeader('authorization').slice('Bearer '.length));
      if (m.refused || !m.known) return void res.writeStatus('401 Unauthorized').end();
      app.liveness.renew(m, 'passing', (r) => {
        if (gone) return;
        if (r !== 'renewed') return res.cork(() => void res.writeStatus('500 Internal Server Error').end());
        res.cork(() => {
          res.writeStatus('204 No Content');
          res.writeHeader('Cache-Control', 'no-store');
          res.end();
        });
      });
    },
  };
  const urls: Record<string, string> = { product };
  const sockets: uWS.us_listen_socket[] = [];
  for (const [name, h] of Object.entries(handlers)) {
    const port = await new Promise<number>((ok, no) =>
      uWS.App().put('/services/:id/heartbeat', h).listen('127.0.0.1', 0, (sock) => {
        if (!sock) return no(new Error('listen'));
        sockets.push(sock);
        ok(uWS.us_socket_local_port(sock));
      }),
    );
    urls[name] = `http://127.0.0.1:${port}/services/${svc.id}/heartbeat`;
  }
  const script = `${dir}/hb.lua`;
  writeFileSync(script, `wrk.method = "PUT"\nwrk.headers["authorization"] = "Bearer ${svc.heartbeatToken}"\n`);
  const wrk = (url: string, d: number) =>
    new Promise<string>((ok, no) => {
      const p = spawn('wrk', ['-t1', `-c${CONN}`, `-d${d}s`, '-s', script, url]);
      let out = '';
      p.stdout.on('data', (x: Buffer) => (out += x.toString()));
      p.on('error', no);
      p.on('exit', () => ok(out));
    });
  const names = ['ceiling', 'floor', 'script', 'lean', 'product'];
  for (const n of names) await wrk(urls[n]!, 1); // warm-up, not counted
  const runs: Record<string, { rps: number; us: number }[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < ROUNDS; i++) {
    for (const n of names) {
      const c0 = process.cpuUsage();
      const out = await wrk(urls[n]!, DUR);
      const c = process.cpuUsage(c0);
      if (/Non-2xx|Socket errors/.test(out)) throw new Error(`${n}: ${out}`);
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]);
      runs[n]!.push({ rps, us: (c.user + c.system) / (rps * DUR) });
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const load = loadAverage();
  console.log(`heartbeat parts (wrk -t1 -c${CONN}, ${ROUNDS} rounds of ${DUR} s; load ${load}); ratio: median over rounds of the rate ÷ that round's ceiling`);
  for (const n of names) {
    const r = runs[n]!;
    const ratios = r.map((x, i) => x.rps / runs.ceiling![i]!.rps);
    console.log(`  ${n.padEnd(8)} ratio ${med(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}); this process's CPU ${med(r.map((x) => x.us)).toFixed(1)} µs a request (median); req/s ${r.map((x) => Math.round(x.rps)).join(', ')}`);
  }
  const b = app.liveness.batch.stats;
  console.log(`  heartbeat-2.lua calls: ${b.calls} answering ${b.beats} heartbeats (${(b.beats / Math.max(1, b.calls)).toFixed(1)} a call) in ${b.lines} lines`);
  for (const sock of sockets) uWS.us_listen_socket_close(sock);
} finally {
  rmSync(dir, { recursive: true, force: true });
  await s.close();
}
process.exit(0);
