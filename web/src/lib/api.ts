// fetch() for the admin API. The CSRF token lives only in this module's memory (never in
// storage a script on another page could read); it rides along on every call but GET.
// A 401 anywhere means the session is gone: the app listens for `admin-unauthorized`.
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let csrfToken = '';

export function setCsrf(token: string): void {
  csrfToken = token;
}

export function hasCsrf(): boolean {
  return csrfToken !== '';
}

export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const method = init.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const r = await fetch(path, {
    method,
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  if (r.status === 204) return undefined as T;
  const data = (await r.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
  if (!r.ok) {
    if (r.status === 401 && path !== '/admin/session') window.dispatchEvent(new CustomEvent('admin-unauthorized'));
    throw new HttpError(r.status, data?.error?.code ?? 'HTTP_' + r.status, data?.error?.message ?? r.statusText);
  }
  return data as T;
}

/** Navigate inside the single page (hash routes keep the server to one HTML file). */
export function go(hash: string): void {
  if (location.hash !== hash) location.hash = hash;
}
