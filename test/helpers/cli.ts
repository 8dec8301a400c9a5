// The admin CLI (src/admin/cli/main.ts) run in-process: its arguments, the suite's environment
// with `env` on top, `stdin` as its input; what it wrote to stdout and stderr, and its exit code.
import { PassThrough, Readable } from 'node:stream';
import { main, type Io } from '../../src/admin/cli/main.js';
import { baseEnv } from './env.js';

export interface CliRun {
  code: number;
  out: string;
  err: string;
}

export async function cli(args: string[], env: Record<string, string>, stdin = ''): Promise<CliRun> {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks = { out: '', err: '' };
  out.on('data', (b: Buffer) => (chunks.out += b.toString()));
  err.on('data', (b: Buffer) => (chunks.err += b.toString()));
  const io: Io = { stdin: Readable.from([stdin]), stdout: out, stderr: err, env: { ...baseEnv(), ...env } };
  const code = await main(args, io);
  return { code, ...chunks };
}
