// Where the project lives on disk, found from this module's own location so that the same
// code works from src/ (tests through a loader) and from dist/ (compiled).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'redis'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the project root (package.json beside redis/)');
    dir = up;
  }
}

export const ROOT = findRoot();
