// Command-line options of the liveness benches (bench/liveness.ts, bench/heartbeat-parts.ts):
// `--name value`, the default when the option is absent.

/** The number after `--name`, or `d`. */
export function numArg(name: string, d: number): number {
  const i = process.argv.indexOf('--' + name);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
}

/** The text after `--name`, or `d`. */
export function strArg(name: string, d: string): string {
  const i = process.argv.indexOf('--' + name);
  return i >= 0 ? process.argv[i + 1]! : d;
}
