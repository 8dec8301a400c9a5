// A test process killed from outside (tap's timeout, SIGKILL, a crash) runs no teardown: the
// servers it spawned must not outlive it (dieWithTest in helpers/die-with-test.ts). A child
// node process stands for the test: it starts a redis-server through the helper
// (helpers/redis-server.ts), prints its pid and is SIGKILLed; the redis-server must be gone
// soon after.
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../src/hot/paths.js';
import { waitFor } from '../helpers/wait.js';

/** running, and not a zombie waiting for a parent that is gone to reap it */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

t.test('a redis-server started by a test dies with the test process', async (t) => {
  const helper = join(ROOT, 'dist/test/helpers/redis-server.js');
  const script = `const { startRedis } = await import(${JSON.stringify(helper)}); const r = await startRedis(); console.log('redis ' + r.pid()); setInterval(() => undefined, 1000);`;
  const fake = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  fake.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const pid = Number(await waitFor('the redis pid', () => /redis (\d+)/.exec(out)?.[1], 20_000, 50));
  t.teardown(() => {
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
  t.ok(alive(pid), `redis-server ${pid} runs while its test does`);
  fake.kill('SIGKILL');
  await waitFor(`redis-server ${pid} gone after its test was killed`, () => !alive(pid), 20_000, 100).catch(() => undefined);
  t.notOk(alive(pid), 'the orphaned redis-server was stopped');
});
