// The arguments of the index's write scripts, in their ARGV order (the one place that knows
// it): apply-service-1.lua for one service's state (a write, or a row a rebuild page left
// out), index-page-1.lua for a page of a generation being built. Used by the projector
// (projector.ts) and the rebuild (rebuild.ts).
import type { Keys } from '../domain/keys.js';
import { memberSuffixes } from '../domain/keys.js';
import { headerData, serializeService, type ServiceRecord } from '../domain/service.js';
import type { IndexPageRow } from '../store/index-pages.js';
import { encodeSets } from '../../workers/buckets.js';

/**
 * apply-service.lua's arguments, in its ARGV order (the one place that knows it): the state's
 * seq, document, header data, members and replacement seqs already serialised ("" each when
 * the service is gone).
 */
function applyScriptArgs(keys: Keys, gen: string, ns: string, id: string, rev: number | string, seq: string, doc: string, hdr: string, members: string, repl: string, channel: string): (string | number)[] {
  return [keys.ver(ns, gen), keys.base(ns, gen), id, rev, seq, doc, hdr, members, repl, channel];
}

/** `channel`: where to publish the write's delta for near caches ("" none: a generation nobody reads yet) */
export function applyArgs(keys: Keys, gen: string, ns: string, id: string, rev: number, s: ServiceRecord | null | undefined, channel = ''): (string | number)[] {
  if (!s) return applyScriptArgs(keys, gen, ns, id, rev, '', '', '', '', '', channel);
  return applyScriptArgs(keys, gen, ns, id, rev, String(s.seq), serializeService(s), headerData(s), memberSuffixes(s).join('\n'), s.replacementSeqs.join(','), channel);
}

/**
 * Arguments of index-page-1.lua: services of one namespace (in seq order) for a generation
 * being built, each with the version it was read with (the rebuild's revision rule lives
 * in that script). The rows come from PostgreSQL already serialised (loadIndexPage); their
 * members are grouped here per set and encoded per bucket (encodeSets), so that the
 * script does no work per member: Lua is Redis's one thread, this process has time to spare.
 */
export function pageArgs(keys: Keys, gen: string, ns: string, page: IndexPageRow[]): (string | Buffer)[] {
  const ids: string[] = [keys.ver(ns, gen), keys.base(ns, gen), String(page.length)];
  const docs: string[] = [];
  const hdrs: string[] = [];
  const repls: string[] = [];
  const sets = new Map<string, number[]>();
  let n = 0;
  for (const [id, , version, seq, doc, members, hdr, repl] of page) {
    ids.push(id, seq + ':' + version);
    docs.push(seq, doc);
    if (hdr) hdrs.push(seq, hdr);
    if (repl) repls.push(seq, repl);
    const q = Number(seq);
    for (const m of members.split('\n')) {
      if (!m) continue;
      const l = sets.get(m);
      if (!l) sets.set(m, [q]);
      else if (l[l.length - 1] !== q) l.push(q); // rows come in seq order: a repeat is this row's
      else continue;
      n++;
    }
  }
  const { index, blob } = encodeSets(sets, n);
  return (ids as (string | Buffer)[]).concat(docs, String(hdrs.length / 2), hdrs, String(repls.length / 2), repls, index, blob);
}

/** applyArgs() of a rebuild page's row: the same values, already serialised by PostgreSQL. */
export function pageRowApplyArgs(keys: Keys, gen: string, [id, ns, version, seq, doc, members, hdr, repl]: IndexPageRow): (string | number)[] {
  return applyScriptArgs(keys, gen, ns, id, version, seq, doc, hdr, members, repl, '');
}
