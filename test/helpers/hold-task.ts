// A Piscina task for tests: it blocks its worker thread until the test stores a non-zero
// value in the shared flag (Atomics), so a test can occupy the pool's threads and queue at
// will instead of hoping that concurrent requests happen to fill them.
export default function hold(task: { flag: SharedArrayBuffer }): number {
  const f = new Int32Array(task.flag);
  while (Atomics.load(f, 0) === 0) Atomics.wait(f, 0, 0, 1000);
  return 1;
}
