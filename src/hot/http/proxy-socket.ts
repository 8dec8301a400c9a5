// The reverse proxy's own way in: a Unix socket per uWS thread in PROXY_SOCKET_DIR
// (`registry-<thread>.sock`). Requests that arrive on one are the proxy's, and only theirs
// have X-Forwarded-For / X-Real-IP believed (route.ts): who may connect is decided by the
// directory's owner and mode, which no client on the network, and no other local user, can
// forge, where any local process can connect from a loopback address. A socket per thread
// because a Unix socket cannot be shared the way SO_REUSEPORT shares a port (a second bind of
// the path replaces the first); the shipped nginx balances over all of them.
import { lstatSync, mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

const NAME = /^registry-\d+\.sock$/;

/** the socket of uWS thread `index` */
export function proxySocketPath(dir: string, index: number): string {
  return join(dir, `registry-${index}.sock`);
}

/**
 * Make sure `dir` exists (created 0700) and that only its owner, this process's user, and
 * at most its group can enter it: a directory others can enter or that someone else owns
 * would let them talk as the proxy. Throws naming what is wrong.
 */
export function prepareSocketDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`PROXY_SOCKET_DIR ${dir} is not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) throw new Error(`PROXY_SOCKET_DIR ${dir} belongs to uid ${st.uid}, not to this server's user (uid ${uid})`);
  if (st.mode & 0o007) {
    throw new Error(`PROXY_SOCKET_DIR ${dir} has mode ${(st.mode & 0o777).toString(8)}: other users could connect as the proxy; chmod o-rwx it (0700, or 0750 with the proxy's group)`);
  }
}

/** Remove the sockets a previous run left behind (a run with more threads than this one). */
export function removeStaleSockets(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return; // not created yet
  }
  for (const n of names) {
    const p = join(dir, n);
    if (NAME.test(n) && lstatSync(p).isSocket()) unlinkSync(p);
  }
}
