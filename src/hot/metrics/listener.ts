// /metrics on its own listener (METRICS_HOST:METRICS_PORT, loopback by default), never on
// the public port: per-route counts and latencies, sandbox and rate-limit figures are for
// operators. One listener per process, a part of thread 0 (compose.ts); it shows every
// serving thread (metrics/threads.ts). It is node:http, not uWS: a scrape every few
// seconds is not the hot path, and node:http needs no second uWS app per thread
// (docs/decisions/metrics-and-logs.md). METRICS_ENABLED=false turns both the
// listener and the per-request accounting off.
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorBodyOf } from '../domain/errors.js';
import { observeRequest } from './metrics.js';

export interface MetricsListener {
  port: number;
  close(): Promise<void>;
}

export async function startMetricsListener(host: string, port: number, scrape: () => Promise<{ contentType: string; body: string }>): Promise<MetricsListener> {
  const srv: HttpServer = createServer((req, res) => {
    const t0 = performance.now();
    const path = (req.url ?? '').split('?')[0];
    const method = req.method ?? 'GET';
    const answer = (status: number, type: string, body: string, extra: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body), ...extra });
      res.end(method === 'HEAD' ? undefined : body);
      // the scrape being answered is counted after it was answered (it shows in the next one)
      if (path === '/metrics') observeRequest('/metrics', method, status, (performance.now() - t0) / 1000);
    };
    const json = 'application/json; charset=utf-8';
    if (path !== '/metrics') return answer(404, json, errorBodyOf('METRICS_ONLY'));
    if (method !== 'GET' && method !== 'HEAD') return answer(405, json, errorBodyOf('METHOD_NOT_ALLOWED', [method, 'GET, HEAD']), { Allow: 'GET, HEAD' });
    scrape().then(
      (m) => answer(200, m.contentType, m.body),
      () => answer(503, json, errorBodyOf('METRICS_FAILED'), { 'Retry-After': '1' }),
    );
  });
  // a malformed request line or header: 400 with the contract's error body, then close
  srv.on('clientError', (_err, socket) => {
    const body = errorBodyOf('MALFORMED_REQUEST');
    if (socket.writable) socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, host, () => {
      srv.off('error', reject);
      resolve();
    });
  });
  srv.unref();
  return {
    port: (srv.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        srv.close(() => resolve());
        srv.closeAllConnections();
      }),
  };
}

/** The process's /metrics listener as a part of a serving thread (compose.ts); `at` null: none. */
export function metricsListenerPart(at: { host: string; port: number } | null, scrape: () => Promise<{ contentType: string; body: string }>) {
  let listener: MetricsListener | null = null;
  return {
    name: 'metrics-listener',
    async start(): Promise<void> {
      if (!at) return;
      try {
        listener = await startMetricsListener(at.host, at.port, scrape);
      } catch (err) {
        throw new Error(`cannot listen for /metrics on ${at.host}:${at.port}: ${(err as Error).message}`, { cause: err });
      }
    },
    stop: () => listener?.close(),
    port: (): number | null => listener?.port ?? null,
  };
}
