// A real Prometheus (Debian's) with `http_sd_configs` pointed at the registry, asserted
// through its own /api/v1/targets: it discovers the registered backends (little HTTP servers
// this test starts) and scrapes them, relabels a property into a label, leaves critical
// services out (healthy=true in the SD URL), and follows a registration and a deletion.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '../helpers/free-port.js';
import { registerProduction, serve } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir, startBackend, startTool, toolPath, type Backend } from './tools.js';

const s = await serve(t);
const backends: Backend[] = [];
for (const name of ['red', 'blue', 'sick', 'late']) backends.push(await startBackend(name));
t.teardown(() => Promise.all(backends.map((b) => b.close())));
const [red, blue, sick, late] = backends as [Backend, Backend, Backend, Backend];
const endpoint = (b: Backend) => `http://127.0.0.1:${b.port}/metrics`;

const r1 = await registerProduction(s, { endpoint: endpoint(red), capabilities: ['app'], properties: { team: 'red' } });
await registerProduction(s, { endpoint: endpoint(blue), capabilities: ['app'], properties: { team: 'blue' } });
const r3 = (await registerProduction(s, { endpoint: endpoint(sick), capabilities: ['app'], properties: { team: 'sick' }, ttl: 3600 })) as { id: string; heartbeatToken?: string };
await registerProduction(s, { endpoint: 'http://127.0.0.1:1/metrics', capabilities: ['other'] }); // another capability
const hb = await s.req(`/services/${r3.id}/heartbeat`, { method: 'PUT', headers: { authorization: `Bearer ${r3.heartbeatToken}`, 'content-type': 'application/json' }, body: '{"status":"critical"}' });
if (hb.status !== 204) throw new Error(`heartbeat: ${hb.status}`);

const dir = await scratchDir(t.teardown.bind(t), 'prometheus');
const webPort = await freePort();
const config = `global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: registry
    http_sd_configs:
      - url: ${s.url}/discovery/prometheus?healthy=true&capability=app
        refresh_interval: 1s
    relabel_configs:
      - source_labels: [__meta_registry_property_team]
        target_label: team
      - source_labels: [__meta_registry_path]
        target_label: __metrics_path__
      - source_labels: [__meta_registry_service_id]
        target_label: service_id
`;
await writeFile(join(dir, 'prometheus.yml'), config);
const prometheus = startTool(await toolPath('prometheus'), [
  `--config.file=${join(dir, 'prometheus.yml')}`,
  `--storage.tsdb.path=${join(dir, 'data')}`,
  `--web.listen-address=127.0.0.1:${webPort}`,
  '--log.level=warn',
]);
t.teardown(() => prometheus.stop());

interface Target {
  labels: Record<string, string>;
  discoveredLabels: Record<string, string>;
  scrapeUrl: string;
  health: string;
}
const targets = async (): Promise<Target[]> => {
  const r = await fetch(`http://127.0.0.1:${webPort}/api/v1/targets?state=active`);
  const body = (await r.json()) as { data: { activeTargets: Target[] } };
  return body.data.activeTargets.filter((x) => x.labels.job === 'registry');
};
const teams = (ts: Target[]) => ts.map((x) => x.labels.team).sort();

t.test('Prometheus discovers the healthy backends, relabels the property, scrapes them', async (t) => {
  const ts = await waitFor('Prometheus up with both healthy targets scraped', async () => {
    const ts = await targets().catch(() => []);
    return ts.length === 2 && ts.every((x) => x.health === 'up') ? ts : null;
  }, 90_000, 250).catch((e: Error) => {
    throw new Error(`${e.message}\nprometheus said:\n${prometheus.output()}`);
  });
  t.same(teams(ts), ['blue', 'red'], 'the property became the `team` label; the critical one is left out');
  const redT = ts.find((x) => x.labels.team === 'red')!;
  t.equal(redT.labels.instance, `127.0.0.1:${red.port}`, 'host:port is the instance');
  t.equal(redT.scrapeUrl, `http://127.0.0.1:${red.port}/metrics`, 'the path relabelled into __metrics_path__');
  t.equal(redT.labels.service_id, r1.id);
  t.equal(redT.discoveredLabels.__meta_registry_health, 'unknown');
  t.equal(redT.discoveredLabels.__meta_registry_capabilities, ',app,');
  t.ok((red.hits.get('/metrics') ?? 0) > 0 && (blue.hits.get('/metrics') ?? 0) > 0, 'both backends were scraped');
  t.equal(sick.hits.get('/metrics') ?? 0, 0, 'the critical one never was');
});

t.test('Prometheus follows a registration and a deletion', async (t) => {
  const added = await registerProduction(s, { endpoint: endpoint(late), capabilities: ['app'], properties: { team: 'late' } });
  await waitFor('the new backend scraped', async () => {
    const ts = await targets();
    return teams(ts).includes('late') && ts.find((x) => x.labels.team === 'late')!.health === 'up';
  }, 60_000, 250);
  t.ok((late.hits.get('/metrics') ?? 0) > 0, 'a registration is scraped');
  t.equal((await s.admin('DELETE', `/admin/api/services/${added.id}`)).status, 204);
  t.equal((await s.admin('DELETE', `/admin/api/services/${r1.id}`)).status, 204);
  await waitFor('the deleted backends dropped', async () => JSON.stringify(teams(await targets())) === JSON.stringify(['blue']), 60_000, 250);
  t.same(teams(await targets()), ['blue'], 'deletions are followed');
});
