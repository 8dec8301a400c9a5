// Parse Prometheus text exposition into name -> [{labels, value}] for the metrics tests.
export type Prom = Map<string, { labels: Record<string, string>; value: number }[]>;

export function parseProm(text: string): Prom {
  const out: Prom = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const list = out.get(m[1]!) ?? [];
    list.push({ labels, value: Number(m[3]) });
    out.set(m[1]!, list);
  }
  return out;
}

/** The value of the sample whose labels are exactly `labels`; undefined when absent. */
export function sample(p: Prom, name: string, labels: Record<string, string>): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  return p.get(name)?.find((s) => JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}
