import t from 'tap';
import { SingleFlight } from '../../src/hot/search/single-flight.js';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A request that can go away, as http/route.ts's Reply tells SingleFlight. */
function requester() {
  const hooks: (() => void)[] = [];
  let gone = false;
  return {
    onAbort: (f: () => void) => void (gone ? f() : hooks.push(f)),
    abort: () => {
      gone = true;
      for (const f of hooks) f();
    },
  };
}

t.test('concurrent calls of one key share one computation', async (t) => {
  const sf = new SingleFlight<string>();
  const d = deferred<string>();
  let calls = 0;
  const fn = () => {
    calls++;
    return d.promise;
  };
  const all = [sf.run('k', undefined, fn), sf.run('k', undefined, fn), sf.run('k', undefined, fn)];
  const other = sf.run('other', undefined, async () => 'o');
  t.equal(calls, 1);
  t.equal(sf.joined, 2);
  d.resolve('v');
  t.same(await Promise.all(all), ['v', 'v', 'v']);
  t.equal(await other, 'o');
  t.equal(sf.size, 0, 'finished flights are forgotten');
  await sf.run('k', undefined, async () => {
    calls++;
    return 'again';
  });
  t.equal(calls, 2, 'a later call computes afresh');
});

t.test('an error reaches every waiter and is not kept', async (t) => {
  const sf = new SingleFlight<string>();
  const d = deferred<string>();
  const a = sf.run('k', undefined, () => d.promise);
  const b = sf.run('k', undefined, () => Promise.resolve('never'));
  d.reject(new Error('boom'));
  await t.rejects(a, /boom/);
  await t.rejects(b, /boom/);
  t.equal(await sf.run('k', undefined, async () => 'ok'), 'ok');
});

t.test('the computation is cancelled only when every waiter has gone', async (t) => {
  const sf = new SingleFlight<string>();
  const c1 = requester();
  const c2 = requester();
  let inner: AbortSignal | null = null;
  const d = deferred<string>();
  const fn = (s: AbortSignal) => {
    inner = s;
    s.addEventListener('abort', () => d.reject(new Error('cancelled')));
    return d.promise;
  };
  const a = sf.run('k', c1, fn);
  const b = sf.run('k', c2, fn);
  a.catch(() => undefined);
  b.catch(() => undefined);
  c1.abort();
  t.equal(inner!.aborted, false, 'one waiter left: still running');
  c2.abort();
  t.equal(inner!.aborted, true, 'nobody left: cancelled');
  t.equal(sf.size, 0, 'a cancelled flight is not joined by the next request');
  await t.rejects(b, /cancelled/);
});

t.test('a waiter without a signal keeps the computation alive', async (t) => {
  const sf = new SingleFlight<string>();
  const c1 = requester();
  let inner: AbortSignal | null = null;
  const d = deferred<string>();
  const fn = (s: AbortSignal) => {
    inner = s;
    return d.promise;
  };
  const a = sf.run('k', c1, fn);
  const b = sf.run('k', undefined, fn);
  c1.abort();
  t.equal(inner!.aborted, false);
  d.resolve('v');
  t.equal(await a, 'v');
  t.equal(await b, 'v');
});
