// The arguments of the index's write scripts, in their ARGV order (the one place that knows
// it): apply-service-1.lua for one service's state (a row a rebuild page left out, a
// tombstone), apply-services-1.lua for many (the projector's writes), index-page-1.lua for
// a page of a generation being built. Used by the projector
// (apply-services.ts) and the rebuild (rebuild.ts).
import { type Keys, memberSuffixes } from '../domain/keys.js';
import { headerData, serializeService, type ServiceRecord } from '../domain/service.js';
import { encodeDoc } from '../domain/doc-codec.js';
import type { IndexPageRow } from './index-pages.js';

/**
 * One state as apply-service-1.lua's ARGV[2..8] and each group of apply-services-1.lua
 * (the one place that knows their order): id, revision, seq, document, header data,
 * members and replacement seqs, already serialised ("" each when the service is gone); the
 * document goes in its stored form (domain/doc-codec.ts).
 */
function stateFields(id: string, rev: number | string, seq: string, doc: string, hdr: string, members: string, repl: string): (string | number)[] {
  return [id, rev, seq, doc && encodeDoc(doc), hdr, members, repl];
}

/** A state's serialised strings: given (what the write statement stored: IndexText) or made from the record. */
function recordFields(id: string, rev: number, s: ServiceRecord | null | undefined, text?: ServiceText): (string | number)[] {
  if (!s) return stateFields(id, rev, '', '', '', '', '');
  return stateFields(id, rev, String(s.seq), text?.doc ?? serializeService(s), text?.hdr ?? headerData(s), text?.members ?? memberSuffixes(s).join('\n'), s.replacementSeqs.join(','));
}

/** The strings a write already serialised for its state (registry/state.ts IndexText). */
export interface ServiceText {
  doc: string;
  members: string;
  hdr: string;
}

/** `channel`: where to publish the write's delta for near caches ("" none: a generation nobody reads yet) */
export function applyArgs(keys: Keys, gen: string, ns: string, id: string, rev: number, s: ServiceRecord | null | undefined, channel = ''): (string | number)[] {
  return [keys.ver(ns, gen), keys.base(ns, gen), ...recordFields(id, rev, s), channel];
}

/** One state for applyManyArgs(): its id, revision (version or tombstone's), record (null: gone) and, when known, its text. */
export interface StateToApply {
  id: string;
  rev: number;
  record: ServiceRecord | null | undefined;
  text?: ServiceText | undefined;
}

/** apply-services-1.lua's arguments: states of one namespace for one generation. */
export function applyManyArgs(keys: Keys, gen: string, ns: string, states: StateToApply[], channel = ''): (string | number)[] {
  const out: (string | number)[] = [keys.ver(ns, gen), keys.base(ns, gen), channel];
  for (const x of states) out.push(...recordFields(x.id, x.rev, x.record, x.text));
  return out;
}

/**
 * Arguments of index-page-1.lua: services of one namespace (in seq order) for a generation
 * being built, each with the version it was read with (the rebuild's revision rule lives
 * in that script). The rows come from PostgreSQL already serialised (loadIndexPage). Their
 * set members are not among them: the rebuild writes each set's buckets once, later
 * (reindex/pending-sets.ts, index-sets-1.lua).
 */
export function pageArgs(keys: Keys, gen: string, ns: string, page: IndexPageRow[]): string[] {
  const ids: string[] = [keys.ver(ns, gen), keys.base(ns, gen), String(page.length)];
  const docs: string[] = [];
  const hdrs: string[] = [];
  const repls: string[] = [];
  for (const [id, , version, seq, doc, , hdr, repl] of page) {
    ids.push(id, seq + ':' + version);
    docs.push(seq, encodeDoc(doc));
    if (hdr) hdrs.push(seq, hdr);
    if (repl) repls.push(seq, repl);
  }
  return ids.concat(docs, String(hdrs.length / 2), hdrs, String(repls.length / 2), repls);
}

/** applyArgs() of a rebuild page's row: the same values, already serialised by PostgreSQL. */
export function pageRowApplyArgs(keys: Keys, gen: string, [id, ns, version, seq, doc, members, hdr, repl]: IndexPageRow): (string | number)[] {
  return [keys.ver(ns, gen), keys.base(ns, gen), ...stateFields(id, version, seq, doc, hdr, members, repl), ''];
}
