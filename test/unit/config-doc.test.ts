// The settings table (src/hot/config-settings.ts) is the one source of the configuration:
// loadConfig() reads exactly its variables and no other, and docs/configuration.md is what
// scripts/gen-config-doc.mjs makes of it, byte for byte (as docs/errors.md is to the error
// registry). A variable added to config.ts without a row, or a row edited without
// regenerating the doc, fails here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { loadConfig } from '../../src/hot/config.js';
import { SETTINGS } from '../../src/hot/config-settings.js';
import { ROOT } from '../../src/hot/paths.js';

/** The variables loadConfig(env) looks up, recorded through a proxy. */
function variablesRead(env: Record<string, string>): Set<string> {
  const seen = new Set<string>();
  const spy = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') seen.add(name);
      return target[name as string];
    },
  });
  loadConfig(spy);
  return seen;
}

t.test('loadConfig reads every variable of the table and nothing else', async (t) => {
  const names = Object.keys(SETTINGS).sort();
  t.same([...variablesRead({})].sort(), names, 'defaults');
  t.same([...variablesRead({ ADMIN_API_KEY: 'k'.repeat(16), NODE_ENV: 'production' })].sort(), names, 'production');
});

t.test('the defaults loadConfig applies are the table\'s', async (t) => {
  const cfg = loadConfig({});
  t.equal(cfg.port, SETTINGS.PORT.def);
  t.equal(cfg.groupCommitWindowMs, SETTINGS.GROUP_COMMIT_WINDOW_MS.def);
  t.equal(cfg.nearCacheBytes, SETTINGS.NEAR_CACHE_MB.def * 1024 * 1024);
  t.equal(cfg.cookieSecure, SETTINGS.COOKIE_SECURE.def);
  t.equal(cfg.databaseUrl, SETTINGS.DATABASE_URL.def);
  t.same(cfg.tiers, { free: 60, pro: 600, enterprise: 6000 }, 'TIERS');
  t.equal(cfg.defaultTier, SETTINGS.DEFAULT_TIER.def);
});

t.test('every row has a topic and a meaning; integers a range holding their default', async (t) => {
  for (const [name, s] of Object.entries(SETTINGS) as [string, (typeof SETTINGS)[keyof typeof SETTINGS]][]) {
    t.ok(s.topic && s.doc.length > 5, `${name}: topic and doc`);
    if ('min' in s && typeof s.def === 'number') t.ok(s.min <= s.def && s.def <= s.max, `${name}: ${s.min} <= ${s.def} <= ${s.max}`);
  }
});

t.test('docs/configuration.md is the generator\'s output for the table', async (t) => {
  const gen = (await import(pathToFileURL(join(ROOT, 'scripts', 'gen-config-doc.mjs')).href)) as { render: (s: unknown) => string };
  const doc = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
  t.equal(doc, gen.render(SETTINGS), 'run `node scripts/gen-config-doc.mjs` after changing src/hot/config-settings.ts');
  for (const name of Object.keys(SETTINGS)) t.match(doc, `| \`${name}\` |`, `${name} has a row`);
});
