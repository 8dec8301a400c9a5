// The `wait` preference of a Prefer header (RFC 7240): how long a client asks a conditional
// GET to be held. Pure: a header in, whole seconds out.
//
// RFC 7240 §2: `Prefer = 1#preference`, `preference = token [ BWS "=" BWS word ] *( OWS ";"
// [ OWS parameter ] )`, `word = token / quoted-string`; names are case-insensitive; a
// preference given twice counts the first time only; one a server does not understand or
// cannot honour is ignored. So `wait` that is absent, empty, not a whole number of seconds, or
// 0 leaves the request answered at once, as without the header (the contract: N ≥ 1).

/**
 * The wait (whole seconds, at most `max`) that `header` prefers; 0 when it prefers none the
 * server honours. Never throws, whatever the bytes.
 */
export function preferredWait(header: string, max: number): number {
  if (!header) return 0;
  for (const pref of split(header, ',')) {
    // the preference itself: up to its first parameter
    const head = split(pref, ';')[0]!;
    const eq = head.indexOf('=');
    const name = (eq < 0 ? head : head.slice(0, eq)).trim();
    if (name.toLowerCase() !== 'wait') continue;
    // the first `wait` decides (RFC 7240 §2), a malformed one included
    if (eq < 0) return 0;
    const v = word(head.slice(eq + 1).trim());
    if (v === null || !/^\d+$/.test(v)) return 0;
    // (a number of more than nine digits is above any configurable maximum)
    const n = v.length > 9 ? Infinity : Number(v);
    return n >= 1 ? Math.min(n, max) : 0;
  }
  return 0;
}

/** `s` cut at each `sep` outside a quoted-string (a backslash escapes the next character there). */
function split(s: string, sep: string): string[] {
  const out: string[] = [];
  let from = 0;
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === sep) {
      out.push(s.slice(from, i));
      from = i + 1;
    }
  }
  out.push(s.slice(from));
  return out;
}

/** A `word`'s value: a token as it is, a quoted-string unquoted; null when a quote is left open. */
function word(v: string): string | null {
  if (!v.startsWith('"')) return v;
  if (v.length < 2 || !v.endsWith('"')) return null;
  let out = '';
  for (let i = 1; i < v.length - 1; i++) {
    if (v[i] === '\\') i++;
    if (i < v.length - 1) out += v[i];
  }
  return out;
}
