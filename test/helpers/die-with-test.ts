// Child processes of a test (redis-server, the built server) that must not outlive it, even
// when the test process is killed from outside and runs no teardown.
import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Tie `child` to this test process: a detached watchdog stops it (SIGTERM, SIGKILL 5 s later)
 * once this process is gone, and itself ends when the child does. A test process killed
 * from outside (tap's timeout, a SIGKILL, a crash) runs no teardown, and its servers used
 * to live on: listening, sweeping and using CPU through later tests and benchmarks.
 */
export function dieWithTest(child: ChildProcess): void {
  const pid = child.pid;
  if (!pid) return;
  const watch = `while kill -0 ${process.pid} 2>/dev/null; do kill -0 ${pid} 2>/dev/null || exit 0; sleep 1; done; kill -TERM ${pid} 2>/dev/null; sleep 5; kill -KILL ${pid} 2>/dev/null; exit 0`;
  spawn('sh', ['-c', watch], { detached: true, stdio: 'ignore' }).unref();
}
