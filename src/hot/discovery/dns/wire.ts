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
  try {
    additionals = dnsPacket.decode(msg).additionals ?? [];
  } catch {
    return refuse('FORMERR');
  }
  const opts = additionals.filter((a): a is OptAnswer => a.type === 'OPT');
  if (opts.length > 1 || (opts[0] && opts[0].name !== '.')) return refuse('FORMERR');
  const edns = opts[0] ? { udpSize: opts[0].udpPayloadSize, version: opts[0].ednsVersion } : null;
  return { kind: 'query', query: { id, echoFlags, question, edns } };
}

/** The OPT record of an answer: our payload size and the upper bits of an extended rcode. */
function opt(rcode: DnsRcode): OptAnswer {
  return { name: '.', type: 'OPT', udpPayloadSize: MAX_UDP, extendedRcode: RCODE[rcode] >> 4, ednsVersion: 0, flags: 0, flag_do: false, options: [] };
}

/** The wire size of records, as dns-packet writes them (it never compresses names). */
export function recordsLength(records: readonly Answer[]): number {
  return records.length === 0 ? 0 : dnsPacket.encodingLength({ answers: [...records] }) - 12;
}

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
  const additionals = q.edns ? [...r.additionals, opt(r.rcode)] : r.additionals;
  const body = dnsPacket.encode({ id: q.id, type: 'response', flags, questions: [], answers: r.answers, authorities: r.authorities, additionals });
  const out = Buffer.concat([body.subarray(0, 12), q.question.raw, body.subarray(12)]);
  out.writeUInt16BE(1, 4);
  return out;
}

/** A header-only answer: an error for a message that was not read further, or an empty TC. */
export function encodeRefusal(r: Refusal, extraFlags = 0): Buffer {
  const out = Buffer.alloc(12);
  out.writeUInt16BE(r.id, 0);
  out.writeUInt16BE(QR | (r.opcode << 11) | r.echoFlags | extraFlags | (RCODE[r.rcode] & 0xf), 2);
  return out;
}
