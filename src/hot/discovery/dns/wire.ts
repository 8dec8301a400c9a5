// DNS messages in and out. A query is read in three steps so that every failure has its
// answer: the 12-byte header (too short, or a response: dropped, so two servers can never
// bounce packets between them), the opcode (not QUERY: NOTIMP), then exactly one question,
// read here label by label (any byte allowed, no compression), and the whole message through
// dns-packet (anything it refuses, several questions or OPT records: FORMERR). Answers are
// encoded by dns-packet with the query's question bytes copied back verbatim, so the case a
// resolver asked in (0x20 randomisation) and any odd byte come back as sent.
import dnsPacket, { type Answer, type OptAnswer } from 'dns-packet';
import type { DnsRcode } from './types.js';

export interface Question {
  /** the question section as received (name, type, class) */
  raw: Buffer;
  /** the name's labels, one Latin-1 string per wire label (so a `.` in a label stays in it) */
  labels: string[];
  type: number;
  class: number;
}

export interface Query {
  id: number;
  /** RD and CD, copied into the answer */
  echoFlags: number;
  question: Question;
  /** the EDNS0 OPT record's payload size and version, when the query had one */
  edns: { udpSize: number; version: number } | null;
}

/** A message that is not answered normally: its header bits and the error to send. */
export interface Refusal {
  id: number;
  opcode: number;
  echoFlags: number;
  rcode: DnsRcode;
}

export type Parsed = { kind: 'query'; query: Query } | { kind: 'error'; refusal: Refusal } | { kind: 'drop' };

const QR = 0x8000;
const AA = 0x0400;
export const TC = 0x0200;
const RD_CD = 0x0110;
const RCODE: Record<DnsRcode, number> = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5, BADVERS: 16 };
export const TYPE = { A: 1, NS: 2, SOA: 6, AAAA: 28, SRV: 33, OPT: 41, IXFR: 251, AXFR: 252, ANY: 255 } as const;
export const CLASS_IN = 1;
/** the largest UDP answer this server sends, whatever a query advertises */
export const MAX_UDP = 4096;

/** The question starting at byte 12, or null when it is cut short or not plain labels. */
function readQuestion(msg: Buffer): Question | null {
  const labels: string[] = [];
  let at = 12;
  for (;;) {
    if (at >= msg.length) return null;
    const len = msg[at]!;
    if (len === 0) break;
    // a compression pointer (0xc0) or a reserved label type: nothing earlier to point at
    if (len > 63 || at + 1 + len > msg.length) return null;
    labels.push(msg.toString('latin1', at + 1, at + 1 + len));
    at += 1 + len;
    if (at - 12 > 254) return null;
  }
  at += 1;
  if (at + 4 > msg.length) return null;
  return { raw: msg.subarray(12, at + 4), labels, type: msg.readUInt16BE(at), class: msg.readUInt16BE(at + 2) };
}

export function parseQuery(msg: Buffer): Parsed {
  if (msg.length < 12) return { kind: 'drop' };
  const flags = msg.readUInt16BE(2);
  if (flags & QR) return { kind: 'drop' };
  const id = msg.readUInt16BE(0);
  const opcode = (flags >> 11) & 0xf;
  const echoFlags = flags & RD_CD;
  const refuse = (rcode: DnsRcode): Parsed => ({ kind: 'error', refusal: { id, opcode, echoFlags, rcode } });
  if (opcode !== 0) return refuse('NOTIMP');
  if (msg.readUInt16BE(4) !== 1) return refuse('FORMERR');
  const question = readQuestion(msg);
  if (!question) return refuse('FORMERR');
  let additionals: Answer[];
  // a query that is its question alone, or its question and an OPT record without options
  // (dnsperf, HAProxy), is read here; anything else through dns-packet
  const plain = plainQuery(msg, 12 + question.raw.length);
  if (plain) additionals = plain;
  else {
    try {
      additionals = dnsPacket.decode(msg).additionals ?? [];
    } catch {
      return refuse('FORMERR');
    }
  }
  const opts = additionals.filter((a): a is OptAnswer => a.type === 'OPT');
  if (opts.length > 1 || (opts[0] && opts[0].name !== '.')) return refuse('FORMERR');
  const edns = opts[0] ? { udpSize: opts[0].udpPayloadSize, version: opts[0].ednsVersion } : null;
  return { kind: 'query', query: { id, echoFlags, question, edns } };
}

/**
 * The additional records of a message that holds nothing after its question but, at most, an
 * OPT record with no options: [] or that record, as dns-packet would decode them; null for
 * any other message (dns-packet reads it).
 */
function plainQuery(msg: Buffer, end: number): OptAnswer[] | null {
  if (msg.readUInt16BE(6) !== 0 || msg.readUInt16BE(8) !== 0) return null;
  const ar = msg.readUInt16BE(10);
  if (ar === 0) return msg.length === end ? [] : null;
  if (ar !== 1 || msg.length !== end + 11 || msg[end] !== 0 || msg.readUInt16BE(end + 1) !== TYPE.OPT || msg.readUInt16BE(end + 9) !== 0) return null;
  const flags = msg.readUInt16BE(end + 7);
  return [{ name: '.', type: 'OPT', udpPayloadSize: msg.readUInt16BE(end + 3), extendedRcode: msg[end + 5]!, ednsVersion: msg[end + 6]!, flags, flag_do: (flags & 0x8000) !== 0, options: [] }];
}

/** The OPT record of an answer: our payload size and the upper bits of an extended rcode. */
function opt(rcode: DnsRcode): OptAnswer {
  return { name: '.', type: 'OPT', udpPayloadSize: MAX_UDP, extendedRcode: RCODE[rcode] >> 4, ednsVersion: 0, flags: 0, flag_do: false, options: [] };
}

/** each record's bytes, encoded once per record object (records are never changed once made: records.ts) */
const wires = new WeakMap<Answer, Buffer>();

/**
 * A record's bytes as dns-packet writes it. It never compresses names, so a message's records
 * are these bytes one after another: an answer is assembled from them (encodeReply) instead
 * of encoded whole each time.
 */
export function recordWire(a: Answer): Buffer {
  let w = wires.get(a);
  if (!w) {
    w = dnsPacket.encode({ answers: [a] }).subarray(12);
    wires.set(a, w);
  }
  return w;
}

/** The wire size of records, as dns-packet writes them. */
export function recordsLength(records: readonly Answer[]): number {
  let n = 0;
  for (const r of records) n += recordWire(r).length;
  return n;
}

/** the OPT record of an answer, by rcode (made once each) */
const opts = new Map<DnsRcode, OptAnswer>();
const optOf = (rcode: DnsRcode): OptAnswer => {
  let o = opts.get(rcode);
  if (!o) opts.set(rcode, (o = opt(rcode)));
  return o;
};

export const OPT_LENGTH = 11;

export interface Reply {
  rcode: DnsRcode;
  authoritative: boolean;
  truncated: boolean;
  answers: Answer[];
  authorities: Answer[];
  additionals: Answer[];
}

/** The answer to `q`, its question copied back; an OPT record when the query had one. */
export function encodeReply(q: Query, r: Reply): Buffer {
  const flags = QR | (r.authoritative ? AA : 0) | (r.truncated ? TC : 0) | q.echoFlags | (RCODE[r.rcode] & 0xf);
  const opt = q.edns ? optOf(r.rcode) : null;
  // one buffer of the message's size, the records' bytes copied in (no list of parts)
  let size = 12 + q.question.raw.length + (opt ? recordWire(opt).length : 0);
  for (const a of r.answers) size += recordWire(a).length;
  for (const a of r.authorities) size += recordWire(a).length;
  for (const a of r.additionals) size += recordWire(a).length;
  const out = Buffer.allocUnsafe(size);
  out.writeUInt16BE(q.id, 0);
  out.writeUInt16BE(flags, 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt16BE(r.answers.length, 6);
  out.writeUInt16BE(r.authorities.length, 8);
  out.writeUInt16BE(r.additionals.length + (opt ? 1 : 0), 10);
  let at = 12 + q.question.raw.copy(out, 12);
  for (const a of r.answers) at += recordWire(a).copy(out, at);
  for (const a of r.authorities) at += recordWire(a).copy(out, at);
  for (const a of r.additionals) at += recordWire(a).copy(out, at);
  if (opt) recordWire(opt).copy(out, at);
  return out;
}

/** A header-only answer: an error for a message that was not read further, or an empty TC. */
export function encodeRefusal(r: Refusal, extraFlags = 0): Buffer {
  const out = Buffer.alloc(12);
  out.writeUInt16BE(r.id, 0);
  out.writeUInt16BE(QR | (r.opcode << 11) | r.echoFlags | extraFlags | (RCODE[r.rcode] & 0xf), 2);
  return out;
}
