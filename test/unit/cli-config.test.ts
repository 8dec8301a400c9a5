// A bad configuration value stops the start with a message naming the variable: the
// server (node dist/src/hot/main.js) and the command-line tool (bin/registry) alike.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// a dozen cold starts of the server: at a load average of 25 each took 10-12 s, past tap's
// default 120 s for the file
t.setTimeout(600_000);

const root = fileURLToPath(new URL('../../../', import.meta.url));
const run = (file: string, env: Record<string, string>, args: string[] = []) =>
  spawnSync(process.execPath, [file, ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000 });

const cases: [Record<string, string>, RegExp][] = [
  [{ PORT: 'abc' }, /PORT must be an integer, got "abc"/],
  [{ PORT: '70000' }, /PORT must be between 0 and 65535/],
  [{ TIERS: 'bad' }, /TIERS must look like/],
  [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
  [{ METRICS_ENABLED: 'maybe' }, /METRICS_ENABLED must be true or false/],
  [{ CHANGES_POLL_MS: '0' }, /CHANGES_POLL_MS must be between/],
  [{ MAX_JSON_DEPTH: '0' }, /MAX_JSON_DEPTH must be between/],
  [{ TRUSTED_PROXIES: '127.0.0.1,proxy.example' }, /TRUSTED_PROXIES must be a comma-separated list of IP addresses, got "proxy.example"/],
  [{ METRICS_PORT: '70000' }, /METRICS_PORT must be between/],
  [{ METRICS_HOST: 'a b' }, /METRICS_HOST is not a host name or address/],
  [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must use postgres: or postgresql:/],
];

for (const [env, msg] of cases) {
  const name = Object.keys(env)[0]!;
  t.test(`server: bad ${name}`, async (t) => {
    const r = run('dist/src/hot/main.js', env);
    t.equal(r.status, 2, 'exit code 2');
    t.match(r.stderr, /^configuration error: /);
    t.match(r.stderr, msg);
    t.notMatch(r.stdout, /listening/);
  });
}

t.test('bin/registry: bad TIERS', async (t) => {
  const r = run('bin/registry', { TIERS: 'bad' }, ['stats']);
  t.equal(r.status, 2);
  t.match(r.stderr, /configuration error: TIERS must look like/);
});
