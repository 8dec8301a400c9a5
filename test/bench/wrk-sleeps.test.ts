// The load generator's sleeps (bench/wrk.ts childSleeps): the voluntary context switches of
// every thread of a shell's child, read from /proc, which cold.ts reports per answer. Real
// processes: a child that waits on ten sleeps, one that never waits, and a shell with none.
import t from 'tap';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { childSleeps } from '../../bench/wrk.js';

function shell(child: string) {
  // its own process group: stop() ends the shell and its child together
  const sh = spawn('sh', ['-c', `${child} & wait`], { stdio: 'ignore', detached: true });
  return { pid: sh.pid!, stop: () => process.kill(-sh.pid!, 'SIGKILL') };
}

t.test("a child's waits are counted, a busy child's are not, and no child reads as null", async (t) => {
  const waiting = shell(`sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.01; done; sleep 30'`);
  const busy = shell(`sh -c 'while :; do :; done'`);
  const alone = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => {
    waiting.stop();
    busy.stop();
    alone.kill('SIGKILL');
  });
  await sleep(1000);
  const w = childSleeps(waiting.pid);
  const b = childSleeps(busy.pid);
  t.ok(w !== null && w >= 10, `the waiting child slept ${w} times (ten sleeps waited for)`);
  t.ok(b !== null && b <= 5, `the busy child slept ${b} times`);
  t.equal(childSleeps(alone.pid), null, 'a process without a child');
  t.equal(childSleeps(2 ** 22 + 12345), null, 'no such process');
});
