// Command-line flags of bench/run.ts (see bench/README.md, "Running").
export interface Flags {
  quick: boolean;
  /** production services of a named size (--services N); null: FULL (or QUICK) */
  services: number | null;
  /** WORKERS settings: every scenario runs with the first, the main scenario with each */
  workers: number[];
  durationS: number;
  warmupS: number;
  connections: number;
  /** connections of the heavy-intersection load beside the light search (scenario h) */
  heavyConnections: number;
  /** scenario ids to run (a1 a2 b c d e f h); null = all. The ceiling always runs. */
  only: Set<string> | null;
  /** 2: the ceiling runs before and after the scenarios, ratios use the faster; 1: after only */
  ceilingRuns: number;
  regenerate: boolean;
  rebuild: boolean;
  /** rewrite the table in bench/README.md (default: full runs only) */
  readme: boolean;
  pin: boolean;
  /** the load generator: autocannon in-process, or wrk as a child (bench/wrk.ts) */
  generator: 'autocannon' | 'wrk';
  /**
   * the index away: the server's Redis is unreachable, so every read comes from PostgreSQL (the
   * fallback), with no result cache in front (its own ceiling, not the cache's)
   */
  fallback: boolean;
  /** internal: this process was re-executed under taskset */
  pinned: boolean;
  /** the arguments as given, minus --pinned (shown in the report) */
  argv: string[];
}

export const USAGE = `usage: node dist/bench/run.js [--quick | --services N] [--workers 1,2] [--duration S] [--warmup S]
  [--connections N] [--heavy-connections N] [--scenarios a1,a2,b,c,c2,k1,k2,o,p,d,e,f,h,v] [--ceiling-runs 1|2]
  [--regenerate] [--rebuild] [--readme|--no-readme] [--no-pin] [--generator autocannon|wrk] [--fallback]`;

function positiveInt(name: string, v: string | undefined): number {
  if (!v || !/^\d+$/.test(v) || Number(v) < 1) throw new Error(`${name} needs a positive integer\n${USAGE}`);
  return Number(v);
}

function generatorOf(v: string | undefined): 'autocannon' | 'wrk' {
  if (v === undefined || v === 'autocannon' || v === 'wrk') return v ?? 'autocannon';
  throw new Error(`--generator is autocannon or wrk\n${USAGE}`);
}

export function parseFlags(argv: string[], nproc: number): Flags {
  const has = (f: string) => argv.includes(f);
  const val = (f: string) => {
    const i = argv.indexOf(f);
    return i === -1 ? undefined : argv[i + 1];
  };
  const known = new Set(['--quick', '--services', '--workers', '--duration', '--warmup', '--connections', '--heavy-connections', '--scenarios', '--ceiling-runs', '--regenerate', '--rebuild', '--readme', '--no-readme', '--no-pin', '--pinned', '--generator', '--fallback']);
  const withValue = new Set(['--services', '--workers', '--duration', '--warmup', '--connections', '--heavy-connections', '--scenarios', '--ceiling-runs', '--generator']);
  for (let i = 0; i < argv.length; i++) {
    if (!known.has(argv[i]!)) throw new Error(`unknown argument ${argv[i]}\n${USAGE}`);
    if (withValue.has(argv[i]!)) i++;
  }
  const quick = has('--quick');
  const workersRaw = val('--workers');
  // full runs report 1 vs N by default; quick runs stay under a minute with one setting
  const workers = workersRaw ? workersRaw.split(',').map((w) => positiveInt('--workers', w)) : quick || nproc < 2 ? [1] : [1, nproc];
  const only = val('--scenarios');
  const services = val('--services') ? positiveInt('--services', val('--services')) : null;
  if (quick && services) throw new Error(`--quick and --services exclude each other\n${USAGE}`);
  return {
    quick,
    services,
    workers,
    durationS: val('--duration') ? positiveInt('--duration', val('--duration')) : quick ? 3 : 10,
    warmupS: val('--warmup') ? positiveInt('--warmup', val('--warmup')) : quick ? 1 : 3,
    connections: val('--connections') ? positiveInt('--connections', val('--connections')) : 100,
    heavyConnections: val('--heavy-connections') ? positiveInt('--heavy-connections', val('--heavy-connections')) : 10,
    only: only ? new Set(only.split(',')) : null,
    // bracketing the scenarios with two ceiling runs catches a ceiling taken in a noisy moment
    ceilingRuns: val('--ceiling-runs') ? Math.min(2, positiveInt('--ceiling-runs', val('--ceiling-runs'))) : quick ? 1 : 2,
    regenerate: has('--regenerate'),
    rebuild: has('--rebuild'),
    readme: has('--readme') || (!quick && !has('--no-readme')),
    pin: !has('--no-pin'),
    generator: generatorOf(val('--generator')),
    fallback: has('--fallback'),
    pinned: has('--pinned'),
    argv: argv.filter((a) => a !== '--pinned'),
  };
}
