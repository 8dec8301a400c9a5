// The files a static test reads: every file under a directory whose name matches, without
// descending into the directories named in `skip` (build output, dependencies).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

export function sourceFiles(dir: string, name: RegExp, skip: ReadonlySet<string> = new Set()): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.isDirectory()) return skip.has(e.name) ? [] : sourceFiles(join(dir, e.name), name, skip);
    return e.isFile() && name.test(e.name) ? [join(dir, e.name)] : [];
  });
}
