// A bad configuration value stops the start with a message naming the variable: the
// server (node dist/src/hot/main.js) and the command-line tool (bin/registry) alike.
// Every value's message is checked in-process (loadConfig, what main.ts calls first); one
// cold start of each program checks the way it ends: exit code 2, the message on stderr,
// no banner (a cold start costs ~1.8 s of CPU; this file once spawned twelve). A server that
// cannot migrate ends with exit code 4 (main.ts, migrate-apart.ts).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { loadConfig } from '../../src/hot/config.js';
import { ConfigError } from '../../src/hot/config-env.js';

// two cold starts at once: at a load average of 25 each took 10-12 s
t.setTimeout(300_000);

const root = fileURLToPath(new URL('../../../', import.meta.url));
const programEnv = (env: Record<string, string>) => ({ PATH: process.env.PATH ?? '', ...env });
const run = (file: string, env: Record<string, string>, args: string[] = []) =>
  new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { cwd: root, env: programEnv(env), stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });

const cases: [Record<string, string>, RegExp][] = [
  [{ PORT: 'abc' }, /PORT must be an integer, got "abc"/],
  [{ PORT: '70000' }, /PORT must be between 0 and 65535/],
  [{ TIERS: 'bad' }, /TIERS must look like/],
  [{ TIER_MAX_SERVICES: 'free=0' }, /TIER_MAX_SERVICES must look like "free=1000,pro=10000", got "free=0"/],
  [{ TIER_MAX_SERVICES: 'free=10,gold=5' }, /TIER_MAX_SERVICES names "gold", which is not one of TIERS \(free, pro, enterprise\)/],
  [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
  [{ METRICS_ENABLED: 'maybe' }, /METRICS_ENABLED must be true or false/],
  [{ CHANGES_POLL_MS: '0' }, /CHANGES_POLL_MS must be between/],
  [{ MAX_JSON_DEPTH: '0' }, /MAX_JSON_DEPTH must be between/],
  [{ TRUSTED_PROXIES: '127.0.0.1,proxy.example' }, /TRUSTED_PROXIES must be a comma-separated list of IP addresses, got "proxy.example"/],
  [{ PROXY_SOCKET_DIR: '/tmp/a b' }, /PROXY_SOCKET_DIR may hold only letters, digits and \. _ \/ -, got "\/tmp\/a b"/],
  [{ PROXY_SOCKET_DIR: '/tmp/' + 'x'.repeat(80) }, /PROXY_SOCKET_DIR must be at most 80 bytes once absolute/],
  [{ METRICS_PORT: '70000' }, /METRICS_PORT must be between/],
  [{ METRICS_HOST: 'a b' }, /METRICS_HOST is not a host name or address/],
  [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must use postgres: or postgresql:/],
];

for (const [env, msg] of cases) {
  const name = Object.keys(env)[0]!;
  t.test(`configuration: bad ${name}`, async (t) => {
    let err: unknown = null;
    try {
      loadConfig(programEnv(env));
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof ConfigError, 'a ConfigError (main.ts: "configuration error: …", exit 2)');
    t.match((err as Error | null)?.message, msg, 'naming the variable');
  });
}

t.test('TIER_MAX_SERVICES: the defaults per tier, one changed, tiers without a default', async (t) => {
  t.same(loadConfig(programEnv({})).tierMaxServices, { free: 1000, pro: 10000, enterprise: 100000 }, 'the contract defaults');
  t.same(loadConfig(programEnv({ TIER_MAX_SERVICES: ' pro = 7 ' })).tierMaxServices, { free: 1000, pro: 7, enterprise: 100000 }, 'the others keep theirs');
  t.same(loadConfig(programEnv({ TIERS: 'free=60,tiny=5', TIER_MAX_SERVICES: 'tiny=3' })).tierMaxServices, { free: 1000, tiny: 3 });
  t.same(loadConfig(programEnv({ TIERS: 'free=60,huge=9000' })).tierMaxServices, { free: 1000, huge: 1000 }, 'a tier without a default: the smallest');
});

t.test('the programs end on it', async (t) => {
  const [server, cli] = await Promise.all([run('dist/src/hot/main.js', { TRUSTED_PROXIES: '127.0.0.1,proxy.example' }), run('bin/registry', { TIERS: 'bad' }, ['stats'])]);
  t.equal(server.status, 2, 'server: exit code 2');
  t.match(server.stderr, /^configuration error: TRUSTED_PROXIES must be a comma-separated list of IP addresses, got "proxy.example"/, 'server: the message on stderr');
  t.notMatch(server.stdout, /listening/, 'server: no banner');
  t.equal(cli.status, 2, 'bin/registry: exit code 2');
  t.match(cli.stderr, /configuration error: TIERS must look like/, 'bin/registry: the message on stderr');
});

t.test('a server that cannot migrate ends with exit code 4 and the migration thread\'s message', async (t) => {
  // a port nothing listens on (1: privileged, never the test's PostgreSQL)
  const server = await run('dist/src/hot/main.js', { DATABASE_URL: 'postgres://someone:secret@127.0.0.1:1/registry' });
  t.equal(server.status, 4, 'exit code 4');
  t.match(server.stderr, /^cannot migrate postgres:\/\/someone:\*+@127\.0\.0\.1:1\/registry: .*ECONNREFUSED/m, 'the address without its password, and why');
  t.notMatch(server.stderr, /secret/, 'the password is not printed');
  t.notMatch(server.stdout, /listening/, 'no banner');
});
