// The ceiling: a minimal uWebSockets.js server answering every GET with one fixed response
// (status, headers in their order, body) held in memory: the bytes the real server sent
// for the warm search. Nothing is computed per request, so its throughput is what this
// machine, this load generator and uWS can do at best. Started by run.ts as its own
// process, pinned like the real server, with the same number of threads.
// Usage: node dist/bench/ceiling.js <response.json> <port> <threads>
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';

export interface CeilingResponse {
  /** "200 OK" */
  status: string;
  headers: [string, string][];
  bodyBase64: string;
}

interface Args {
  file: string;
  port: number;
}

function serve(a: Args): Promise<void> {
  const r = JSON.parse(readFileSync(a.file, 'utf8')) as CeilingResponse;
  const body = Buffer.from(r.bodyBase64, 'base64');
  const app = uWS.App();
  // the same write sequence as the real server's Reply.send: cork, status, headers, end
  app.any('/*', (res) => {
    res.cork(() => {
      res.writeStatus(r.status);
      for (const [k, v] of r.headers) res.writeHeader(k, v);
      res.end(body);
    });
  });
  return new Promise((resolve, reject) => app.listen('127.0.0.1', a.port, (s) => (s ? resolve() : reject(new Error(`cannot listen on ${a.port}`)))));
}

if (isMainThread) {
  const [file, port, threads] = process.argv.slice(2);
  if (!file || !port) {
    console.error('usage: node dist/bench/ceiling.js <response.json> <port> [threads]');
    process.exit(2);
  }
  const args: Args = { file, port: Number(port) };
  const n = Math.max(1, Number(threads ?? '1'));
  // threads after the first share the port (uWS listens with SO_REUSEPORT), as in main.ts
  const others = Array.from({ length: n - 1 }, () => new Promise<void>((resolve, reject) => {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: args });
    w.once('message', () => resolve());
    w.once('error', reject);
  }));
  Promise.all([serve(args), ...others]).then(
    () => console.log(`ceiling listening on ${port} (${n} thread${n > 1 ? 's' : ''})`),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
  process.once('SIGTERM', () => process.exit(0));
} else {
  serve(workerData as Args).then(() => parentPort!.postMessage('listening'));
}
