// The dashboard in a real browser: Debian's headless Chromium driven by playwright-core,
// against a real server (serve) serving the built web/dist. One flow, as an admin
// would use it: log in, filter by tier, page forward and back, open a drill-down, see the
// map, the services against the quota and a chart that moves while traffic flows, promote
// the tier (a new limit and quota), log out. Screenshots land in test-artifacts/screenshots/
// (git-ignored) for people to look at.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from '../../src/hot/paths.js';
import { parseServiceCreate } from '../../src/hot/domain/validation.js';
import { createServices } from '../../src/hot/writes/register.js';
import { createSandbox, type TestServer, serve } from '../helpers/server.js';
import { ensureWebBuilt } from '../helpers/web.js';
import { waitFor } from '../helpers/wait.js';
import { ADMIN_KEY } from '../helpers/env.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(ROOT, 'test-artifacts', 'screenshots');

/** What the page shows once `ok` holds for it (it gets there by itself); fails with `what` and the last value if never. */
const reached = <T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean) =>
  waitFor(what, async () => {
    const v = await fn();
    if (!ok(v)) throw new Error(`last value: ${JSON.stringify(v)}`);
    return { v };
  }, 20_000, 200).then((x) => x.v);

const pageLabel = (page: Page) => page.locator('sandbox-list #page-label').innerText();
const listedTiers = (page: Page) => page.locator('sandbox-list tbody .tier').allInnerTexts();

t.test('dashboard: login, list, drill-down with map and live chart, promotion, logout', async (t) => {
  ensureWebBuilt();
  mkdirSync(SHOTS, { recursive: true });
  const s: TestServer = await serve(t, { env: { ADMIN_PAGE_SIZE: '3', SANDBOX_CREATE_PER_MINUTE: '1000' } });

  // 5 free and 2 pro sandboxes: 7 in all (3 pages of 3), 5 free (2 pages)
  const places: [string, number, number][] = [
    ['Berlin lab', 52.52, 13.4],
    ['Lagos lab', 6.45, 3.39],
    ['Lima lab', -12.05, -77.04],
    ['Osaka lab', 34.69, 135.5],
    ['Denver lab', 39.74, -104.99],
    ['Perth lab', -31.95, 115.86],
    ['Oslo lab', 59.91, 10.75],
  ];
  const made: Awaited<ReturnType<typeof createSandbox>>[] = [];
  for (const [name, lat, lon] of places) made.push(await createSandbox(s, name, { lat, lon }));
  for (const sb of made.slice(5)) t.equal((await s.admin('POST', `/admin/api/sandboxes/${sb.uuid}/tier`, { tier: 'pro' })).status, 200);
  const target = made[0]!;
  // two services (through the store: the chart below counts the requests from none)
  await createServices(s.app.pg, ['a', 'b'].map((h) => ({ ns: target.uuid, input: parseServiceCreate({ endpoint: `https://${h}.example.com`, capability: 'web' }) })));

  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  t.teardown(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && !/401 \(Unauthorized\)/.test(m.text()) && problems.push(`console: ${m.text()}`));

  await page.goto(`${s.url}/admin/`);

  // ---- login: a wrong key is refused, the right one opens the dashboard
  await page.locator('admin-login input[name=apiKey]').fill('not-the-admin-key');
  await page.locator('admin-login button[type=submit]').click();
  await page.locator('admin-login [role=alert]').waitFor();
  t.match(await page.locator('admin-login [role=alert]').innerText(), /not the admin key/);
  await page.locator('admin-login input[name=apiKey]').fill(ADMIN_KEY);
  await page.locator('admin-login button[type=submit]').click();
  await page.locator('#logout').waitFor();
  const cookie = (await context.cookies()).find((c) => c.name === 'registry_admin');
  t.ok(cookie?.httpOnly, 'the session cookie is HttpOnly');
  t.equal(cookie?.sameSite, 'Strict');
  t.equal(cookie?.path, '/admin');

  // ---- stats and the overview map
  await reached('stats', () => page.locator('global-stats .tile').count(), (n) => n >= 7);
  t.match(await page.locator('global-stats .tiles').innerText(), /Sandboxes\s*7/);
  t.equal(await page.locator('registry-app world-map circle.marker').count(), 7, 'every located sandbox is marked on the overview');

  // ---- list: all tiers, then free only; paging forward and back from the server's fields
  t.equal(await reached('first page', () => pageLabel(page), (x) => /Page 1 · 7 sandboxes/.test(x)), 'Page 1 · 7 sandboxes');
  t.equal(await page.locator('sandbox-list tbody tr').count(), 3);
  t.ok(await page.locator('sandbox-list #prev').isDisabled(), 'no previous page on page 1');
  await page.locator('sandbox-list #tier').selectOption('pro');
  await reached('pro filter', () => pageLabel(page), (x) => /Page 1 · 2 sandboxes/.test(x));
  t.same(await listedTiers(page), ['pro', 'pro']);
  t.ok(await page.locator('sandbox-list #next').isDisabled(), 'one page of pro sandboxes');
  await page.locator('sandbox-list #tier').selectOption('free');
  await reached('free filter', () => pageLabel(page), (x) => /Page 1 · 5 sandboxes/.test(x));
  t.same(await listedTiers(page), ['free', 'free', 'free']);
  await page.locator('sandbox-list #next').click();
  await reached('page 2', () => pageLabel(page), (x) => x.startsWith('Page 2'));
  t.same(await listedTiers(page), ['free', 'free'], 'the last page holds the rest');
  t.ok(await page.locator('sandbox-list #next').isDisabled(), 'no next page at the end');
  t.ok(await page.locator('sandbox-list #prev').isEnabled());
  await page.locator('sandbox-list #prev').click();
  await reached('back on page 1', () => pageLabel(page), (x) => x.startsWith('Page 1'));
  t.ok(await page.locator(`sandbox-list a[data-uuid="${target.uuid}"]`).isVisible(), 'the first sandbox is back in view');
  await page.screenshot({ path: join(SHOTS, 'list.png'), fullPage: true });

  // ---- drill-down: facts, map with the sandbox marked
  await page.locator(`sandbox-list a[data-uuid="${target.uuid}"]`).click();
  await page.locator('sandbox-detail h1').waitFor();
  t.equal(await page.locator('sandbox-detail h1').innerText(), 'Berlin lab');
  t.equal(await page.locator('sandbox-detail #limit').innerText(), '60 requests/min');
  t.equal(await page.locator('sandbox-detail #services').innerText(), '2 of 1,000', 'its services against its tier\'s quota');
  t.equal(await page.locator('sandbox-detail #quota').evaluate((el) => { const m = el as unknown as { value: number; max: number }; return `${m.value}/${m.max}`; }), '2/1000');
  t.ok((await page.locator('sandbox-detail world-map path.country').count()) > 100, 'the countries are drawn');
  t.equal(await page.locator('sandbox-detail world-map circle.marker').count(), 1, 'the sandbox is marked');

  // ---- live chart: it moves while traffic flows into the sandbox with its key
  const chart = page.locator('sandbox-detail rate-chart');
  await reached('first poll', () => chart.evaluate((el) => (el as unknown as { polls: number }).polls), (n) => n > 0);
  const before = await chart.evaluate((el) => [...(el as unknown as { plotted: number[] }).plotted]);
  t.equal(before.length, 72, '72 buckets plotted');
  t.equal(before.reduce((a, b) => a + b, 0), 0, 'nothing plotted before any traffic');
  t.match(await chart.locator('.live').innerText(), /^0 req\/min/);
  for (let i = 0; i < 20; i++) {
    const r = await s.req(`/sandbox/${target.uuid}/services`, { headers: { authorization: `Bearer ${target.apiKey}` } });
    t.equal(r.status, 200, `request ${i} admitted`);
    await r.arrayBuffer();
  }
  const rate = await reached('the chart to show the traffic', () => chart.evaluate((el) => (el as unknown as { rate: number }).rate), (n) => n >= 20);
  t.equal(rate, 20, 'the window holds the 20 requests');
  const after = await chart.evaluate((el) => [...(el as unknown as { plotted: number[] }).plotted]);
  t.ok(after.some((v) => v > 0), 'the plotted series moved');
  t.ok(after.every((v) => v <= 60), 'capped at the limit');
  t.match(await chart.locator('.live').innerText(), /^20 req\/min in the current window · 33 % of 60/);
  t.equal(await chart.locator('.cadence').getAttribute('data-cadence'), '1000', 'polling every second while traffic flows');
  t.match(await page.locator('sandbox-detail #total').innerText(), /^2\d$/, 'the request counter follows the polls');
  await page.screenshot({ path: join(SHOTS, 'detail.png'), fullPage: true });

  // ---- promotion: the new limit shows at once and applies to the next request
  await page.locator('sandbox-detail tier-form #new-tier').selectOption('pro');
  await page.locator('sandbox-detail tier-form #apply-tier').click();
  await reached('the new limit', () => page.locator('sandbox-detail #limit').innerText(), (x) => x === '600 requests/min');
  t.equal(await page.locator('sandbox-detail #tier').innerText(), 'pro');
  await reached('the new quota', () => page.locator('sandbox-detail #services').innerText(), (x) => x === '2 of 10,000');
  t.match(await page.locator('sandbox-detail tier-form [role=status]').innerText(), /600 requests per minute/);
  await reached('the history row', () => page.locator('sandbox-detail table').innerText(), (x) => /free\s+pro\s+session:/.test(x));
  const next = await s.req(`/sandbox/${target.uuid}/services`, { headers: { authorization: `Bearer ${target.apiKey}` } });
  t.match(next.headers.get('ratelimit-policy') ?? '', /q=600/, 'the next request runs under the new limit');
  await reached('the chart scale', () => chart.locator('.live').innerText(), (x) => / of 600$/.test(x));
  await page.screenshot({ path: join(SHOTS, 'detail-promoted.png'), fullPage: true });

  // ---- logout: back to the login form, and the old cookie no longer works
  await page.locator('#logout').click();
  await page.locator('admin-login input[name=apiKey]').waitFor();
  const stale = await s.req('/admin/api/stats', { headers: { cookie: `registry_admin=${cookie!.value}` } });
  t.equal(stale.status, 401, 'the session is gone on the server');
  t.same(problems, [], 'no script errors or CSP violations in the page');
});
