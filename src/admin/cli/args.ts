// Command-line parsing for bin/registry: positionals plus `--name value` / `--name=value`
// options and `--flag` switches. Hand-written because node:util parseArgs refuses option
// values that start with a dash, and `--lat -33.9` is the natural way to write a latitude.
export interface Parsed {
  positionals: string[];
  options: Record<string, string>;
  flags: Set<string>;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

/** `valued`: options that take a value; anything else starting with -- is a switch. */
export function parseArgs(argv: string[], valued: readonly string[]): Parsed {
  const out: Parsed = { positionals: [], options: {}, flags: new Set() };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      out.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith('--') || a === '-') {
      out.positionals.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = a.slice(2, eq < 0 ? undefined : eq);
    if (valued.includes(name)) {
      const v = eq < 0 ? argv[++i] : a.slice(eq + 1);
      if (v === undefined) throw new UsageError(`--${name} needs a value`);
      out.options[name] = v;
    } else if (eq < 0) out.flags.add(name);
    else throw new UsageError(`--${name} takes no value`);
  }
  return out;
}

/** A decimal number within [min, max], or a UsageError naming the option. */
export function numberOption(p: Parsed, name: string, min: number, max: number): number | undefined {
  const raw = p.options[name];
  if (raw === undefined) return undefined;
  if (!/^-?\d+(\.\d+)?$/.test(raw)) throw new UsageError(`--${name} must be a number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/**
 * A progress bar on stderr, redrawn in place on a terminal (at most 10 times a second, with
 * the time left while the total is known), one line per 10% otherwise.
 * `update(n, note)`: n of total done; the note (what n counts, a rate) follows the bar, and
 * without one the bar shows n's own rate a second. `bytes`: n and total count bytes (shown in MB).
 */
export function progressBar(
  label: string,
  total: number | null,
  out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number },
  opts: { bytes?: boolean } = {},
): { update(n: number, note?: string): void; done(msg: string): void } {
  const tty = !!out.isTTY;
  const t0 = Date.now();
  let lastStep = -1;
  let lastDraw = 0;
  const amount = (n: number) => (opts.bytes ? (n / 1e6).toFixed(1) : String(n));
  const draw = (n: number, note?: string) => {
    const pct = total ? Math.min(1, n / total) : 0;
    const tail = note ?? `${Math.round(n / Math.max(0.001, (Date.now() - t0) / 1000))}/s`;
    if (tty) {
      const now = Date.now();
      if (now - lastDraw < 100 && n !== total) return;
      lastDraw = now;
      // one line of the terminal: a redraw of a wrapped line would leave its first part behind
      const width = Math.max(10, Math.min(30, (out.columns ?? 100) - 70));
      const fill = Math.round(pct * width);
      const bar = total ? `[${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ${(pct * 100).toFixed(0).padStart(3)}%` : '';
      // the time left, from the rate so far
      const eta = pct > 0 && pct < 1 ? ` ETA ${clock(((now - t0) / 1000) * ((1 - pct) / pct))}` : '';
      out.write(`\r${label} ${bar} ${amount(n)}${total ? '/' + amount(total) : ''}${opts.bytes ? ' MB' : ''} ${tail}${eta}\x1b[K`);
    } else {
      const step = total ? Math.floor(pct * 10) : Math.floor(n / 10_000);
      if (step !== lastStep) {
        lastStep = step;
        out.write(`${label} ${n}${total ? '/' + total : ''} ${tail}\n`);
      }
    }
  };
  return {
    update: draw,
    done(msg: string) {
      if (tty) out.write('\r\x1b[K');
      out.write(msg + '\n');
    },
  };
}

/** seconds as m:ss (h:mm:ss from an hour) */
export function clock(sec: number): string {
  const s = Math.round(sec);
  const mmss = `${Math.floor(s / 60) % 60}:${String(s % 60).padStart(2, '0')}`;
  return s >= 3600 ? `${Math.floor(s / 3600)}:${mmss.padStart(5, '0')}` : mmss;
}
