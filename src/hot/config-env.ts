// The parsers of configuration values (config.ts reads the environment and holds every
// setting with its default; these only read the variables it hands them): integers in a
// range, booleans, log levels, URLs of given schemes (one or a list), host names, host:port
// lists, IP address lists, per-tier numbers and directory paths, each checked and refused with a
// ConfigError naming the variable; redactUrl() hides a URL's password wherever one is shown.
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { normalizeAddress } from './http/client-address.js';

export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

export function int(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function level(env: Env, name: string, def: string): string {
  const raw = env[name] || def;
  if (!LEVELS.includes(raw)) throw new ConfigError(`${name} must be one of ${LEVELS.join(', ')}, got "${raw}"`);
  return raw;
}

export function url(env: Env, name: string, def: string, schemes: string[]): string {
  const raw = env[name] || def;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a URL: "${redactUrl(raw)}"`);
  }
  if (!schemes.includes(u.protocol)) {
    throw new ConfigError(`${name} must use ${schemes.join(' or ')}, got "${u.protocol}"`);
  }
  return raw;
}

/** Strip any password from a URL before it is shown. */
export function redactUrl(raw: string): string {
  return raw.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}

export function hostName(env: Env, name: string, def: string): string {
  const raw = env[name] || def;
  if (!/^[0-9a-zA-Z.:-]+$/.test(raw)) throw new ConfigError(`${name} is not a host name or address: "${raw}"`);
  return raw;
}

/** REDIS_CLUSTER_NODES="host:port,host:port" (empty: none) */
export function hostPorts(env: Env, name: string): string[] {
  const raw = env[name] || '';
  const list = raw ? raw.split(',').map((s) => s.trim()) : [];
  for (const n of list) {
    if (!/^[^:\s]+:\d{1,5}$/.test(n)) throw new ConfigError(`${name} entries must be host:port, got "${n}"`);
  }
  return list;
}

/** REDIS_REPLICA_URLS="redis://a:6379,redis://b:6379": each checked as url() does, named NAME[i] (empty: none) */
export function urls(env: Env, name: string, schemes: string[]): string[] {
  const raw = env[name] || '';
  return raw ? raw.split(',').map((s, i) => url({ [`${name}[${i}]`]: s.trim() }, `${name}[${i}]`, '', schemes)) : [];
}

/** TRUSTED_PROXIES="127.0.0.1,::1": exact IP addresses (no host names, no ranges) */
export function addresses(env: Env, name: string): string[] {
  const raw = (env[name] || '').trim();
  if (!raw) return [];
  return raw.split(',').map((part) => {
    const a = normalizeAddress(part);
    if (!isIP(a)) throw new ConfigError(`${name} must be a comma-separated list of IP addresses, got "${part.trim()}"`);
    return a;
  });
}

/**
 * TIERS="free=60,pro=600": a positive integer per tier name ([a-z0-9_-]{1,32}); `example`
 * is shown in the message of a value that does not parse.
 */
export function tierMap(name: string, raw: string, example: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of raw.split(',')) {
    const m = /^\s*([a-z0-9_-]{1,32})\s*=\s*(\d{1,9})\s*$/.exec(part);
    if (!m || Number(m[2]) < 1) throw new ConfigError(`${name} must look like "${example}", got "${raw}"`);
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

/**
 * A directory for Unix sockets, made absolute against the working directory ("" when unset).
 * Plain characters only (it is written into the proxy's config), and short enough that a
 * socket path in it fits sun_path (108 bytes with its NUL) with room for the file name.
 */
export function socketDir(env: Env, name: string): string {
  const raw = (env[name] || '').trim();
  if (!raw) return '';
  if (!/^[A-Za-z0-9._/-]+$/.test(raw)) throw new ConfigError(`${name} may hold only letters, digits and . _ / -, got "${raw}"`);
  const dir = resolve(raw);
  if (Buffer.byteLength(dir) > 80) throw new ConfigError(`${name} must be at most 80 bytes once absolute (a socket path must fit 107), got ${dir}`);
  return dir;
}

/** DNS_PORT: a port, or `off` */
export function dnsPort(raw: string): number | null {
  if (/^off$/i.test(raw)) return null;
  if (!/^\d{1,5}$/.test(raw) || Number(raw) > 65535) throw new ConfigError(`DNS_PORT must be a port (0-65535) or off, got "${raw}"`);
  return Number(raw);
}

/** DNS_DOMAIN: a host name of at most 180 characters (room for the names built under it), an optional final dot */
export function dnsDomain(raw: string): string {
  const d = raw.replace(/\.$/, '');
  if (d.length > 180 || !d.split('.').every((l) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(l))) {
    throw new ConfigError(`DNS_DOMAIN must be a host name of at most 180 characters, got "${raw}"`);
  }
  return raw;
}

// contract: "of the order of 1,000 / 10,000 / 100,000"; an enterprise sandbox at its rate
// limit (6,000 a minute) fills its quota in ~17 minutes, and then stops growing
const MAX_SERVICES: Readonly<Record<string, number>> = { free: 1_000, pro: 10_000, enterprise: 100_000 };
/** a tier of TIERS that neither TIER_MAX_SERVICES nor MAX_SERVICES names: the smallest default */
const MAX_SERVICES_OTHER = 1_000;

/**
 * TIER_MAX_SERVICES="free=1000,pro=10000": services per sandbox of each tier. Tiers it does
 * not name keep their default (MAX_SERVICES, else MAX_SERVICES_OTHER), so that a test or a
 * deployment can change one; a name that is not a tier of TIERS is refused (a typo would
 * otherwise leave the quota it meant at its default).
 */
export function tierMaxServices(raw: string, t: Readonly<Record<string, number>>): Record<string, number> {
  const given = raw ? tierMap('TIER_MAX_SERVICES', raw, 'free=1000,pro=10000') : {};
  const unknown = Object.keys(given).find((k) => !Object.hasOwn(t, k));
  if (unknown !== undefined) throw new ConfigError(`TIER_MAX_SERVICES names "${unknown}", which is not one of TIERS (${Object.keys(t).join(', ')})`);
  const out: Record<string, number> = {};
  for (const k of Object.keys(t)) out[k] = given[k] ?? MAX_SERVICES[k] ?? MAX_SERVICES_OTHER;
  return out;
}
