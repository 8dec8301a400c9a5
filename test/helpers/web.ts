// The dashboard build for tests that need web/dist: `make test` builds it first; a lone
// run of one test file builds it here when it is missing.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../src/hot/paths.js';

export const WEB_DIST = join(ROOT, 'web', 'dist');

export function ensureWebBuilt(): void {
  if (existsSync(join(WEB_DIST, 'index.html'))) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', 'web', '--logLevel', 'warn'], { cwd: ROOT, stdio: 'inherit' });
}
