// The bench data generator: deterministic, Zipf-skewed, shaped as issue 5 asks.
import t from 'tap';
import { FULL, PROPERTIES_PER_SERVICE, QUICK, capabilityName, sandboxTier, serviceGenerator, sizedSpec, zipf } from '../../bench/dataset.js';
import { prng } from '../../src/admin/seed.js';
import { isToken } from '../../src/hot/domain/tokens.js';

t.test('the same spec yields the same services', async (t) => {
  const a = serviceGenerator(QUICK);
  const b = serviceGenerator(QUICK);
  for (let i = 0; i < 500; i++) t.strictSame(a(`svc-${i}`), b(`svc-${i}`));
  const c = serviceGenerator({ ...QUICK, seed: QUICK.seed + 1 });
  t.notSame(c('svc-0'), serviceGenerator(QUICK)('svc-0'), 'another seed, other services');
});

t.test('capability popularity is Zipf-like with s = 1', async (t) => {
  const next = zipf(2000, 1, prng(7));
  const counts = new Array<number>(2000).fill(0);
  const n = 400_000;
  for (let i = 0; i < n; i++) counts[next()]!++;
  // P(rank k) ∝ 1/k: rank 1 about twice rank 2 and ten times rank 10
  t.ok(Math.abs(counts[0]! / counts[1]! - 2) < 0.15, `rank1/rank2 = ${counts[0]! / counts[1]!}`);
  t.ok(Math.abs(counts[0]! / counts[9]! - 10) < 1, `rank1/rank10 = ${counts[0]! / counts[9]!}`);
  const h = Array.from({ length: 2000 }, (_, k) => 1 / (k + 1)).reduce((a, b) => a + b, 0);
  t.ok(Math.abs(counts[0]! / n - 1 / h) < 0.005, 'rank 1 share matches 1/H(2000)');
  t.ok(counts[1999]! > 0, 'the tail is reached');
});

t.test('services: 1..5 distinct capabilities, 5 distinct properties, about 20 % IoT, valid tokens', async (t) => {
  const next = serviceGenerator(FULL);
  let iot = 0;
  const n = 20_000;
  for (let i = 0; i < n; i++) {
    const s = next(`svc-${i}`);
    if (s.capabilities.length < 1 || s.capabilities.length > 5 || new Set(s.capabilities).size !== s.capabilities.length) t.fail(`capabilities ${s.capabilities}`);
    if (s.properties.length !== PROPERTIES_PER_SERVICE || new Set(s.properties.map(([k]) => k)).size !== PROPERTIES_PER_SERVICE) t.fail('properties');
    if (!s.capabilities.every(isToken) || !s.properties.every(([k]) => isToken(k))) t.fail('tokens');
    if (!/^https:\/\/svc-\d+\.[a-z-]+\.bench\.example\.net\/v[1-3]$/.test(s.endpoint)) t.fail(s.endpoint);
    if (s.iot) {
      iot++;
      if (!s.iot.deviceClasses.length || !s.iot.protocols.length) t.fail('empty IoT profile');
    }
  }
  t.ok(Math.abs(iot / n - 0.2) < 0.02, `IoT share ${iot / n}`);
  t.equal(capabilityName(0), 'cap.0001');
});

t.test('sandbox tiers: some enterprise, some pro, mostly free', async (t) => {
  const tiers = Array.from({ length: FULL.sandboxes }, (_, i) => sandboxTier(FULL, i));
  t.equal(tiers[0], 'enterprise', 'the keyed scenario uses the first sandbox');
  t.equal(tiers.filter((x) => x === 'enterprise').length, 10);
  t.equal(tiers.filter((x) => x === 'pro').length, 90);
  t.equal(QUICK.production * 10, FULL.production, 'quick is ten times smaller');
});

t.test('named sizes: a million is the same shape with 10,000 sandboxes of 10', async (t) => {
  t.equal(sizedSpec(100_000), FULL, '100,000 is the full data set itself');
  const m = sizedSpec(1_000_000);
  t.equal(m.production, 1_000_000);
  t.equal(m.capabilities, FULL.capabilities, 'same capabilities, properties and IoT share');
  t.equal(m.iotShare, FULL.iotShare);
  t.equal(m.sandboxes, 10_000);
  t.equal(m.servicesPerSandbox, 10);
  t.equal(m.name, 'n1000000', 'its own database and key prefix');
});
