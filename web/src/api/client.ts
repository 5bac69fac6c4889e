// The one place that talks HTTP: credentials, CSRF, JSON, errors.
//
// Two ways to be signed in:
// - `token`: a bearer token (`[api.tokens.<name>]` or a user's API token),
//   sent as `Authorization: Bearer …`; kept in sessionStorage (gone with the
//   tab: a secret is never left in localStorage);
// - `session`: the HttpOnly session cookie set by the login endpoint (the
//   browser sends it), plus the CSRF token the login answered, sent as
//   `X-CSRF-Token` on every request that changes something. Nothing secret
//   is kept (the CSRF token is also in the readable `sluice_csrf` cookie), so
//   it is in localStorage too: a new tab is signed in with the same session
//   (issue 22), and signing out in one tab signs out the others.
import type { ErrorBody, ErrorType } from './types';

/** How this tab is signed in. */
export type Credentials =
  | { kind: 'token'; token: string; name: string }
  | { kind: 'session'; csrf: string; name: string };

const KEY = 'sluice.credentials';

/** Header carrying the CSRF token (see docs/specs/ui-api.md). */
export const CSRF_HEADER = 'X-CSRF-Token';

let current: Credentials | null = load();
const listeners = new Set<(c: Credentials | null) => void>();

function load(): Credentials | null {
  try {
    const raw = globalThis.sessionStorage?.getItem(KEY);
    if (raw) return JSON.parse(raw) as Credentials;
    // Another tab's session (never a token: those stay in their tab).
    const shared = globalThis.localStorage?.getItem(KEY);
    const c = shared ? (JSON.parse(shared) as Credentials) : null;
    return c?.kind === 'session' ? c : null;
  } catch {
    return null;
  }
}

/** The current credentials, or null when signed out. */
export function credentials(): Credentials | null {
  return current;
}

/** Replaces the credentials (null signs out) and tells the listeners. */
export function setCredentials(c: Credentials | null): void {
  const wasSession = current?.kind === 'session';
  current = c;
  try {
    if (c) sessionStorage.setItem(KEY, JSON.stringify(c));
    else sessionStorage.removeItem(KEY);
    // The shared copy follows sessions only: a token signed in here leaves the other tabs alone.
    if (c?.kind === 'session') localStorage.setItem(KEY, JSON.stringify(c));
    else if (wasSession) localStorage.removeItem(KEY);
  } catch {
    // Storage may be disabled; the credentials still live for this page.
  }
  for (const l of listeners) l(c);
}

// Signed out (or in as someone else) in another tab: follow it.
globalThis.addEventListener?.('storage', (e: StorageEvent) => {
  if (e.key !== KEY || current?.kind !== 'session') return;
  if (e.newValue === null) setCredentials(null);
});

/** Calls `f` whenever the credentials change; returns the unsubscribe. */
export function onCredentials(f: (c: Credentials | null) => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

/** An error answered by the API (or a network failure, `type: 'network'`). */
export class ApiError extends Error {
  readonly type: ErrorType;
  readonly status: number;
  /** Byte offset into the query string, for `query_parse_error`. */
  readonly position: number | undefined;
  /** Seconds to wait, for `locked` / `rate_limited`. */
  readonly retryAfter: number | undefined;
  /** The request key at fault, when the server names one. */
  readonly field: string | undefined;

  constructor(type: ErrorType, message: string, status: number, position?: number, extra?: { retryAfter?: number | undefined; field?: string | undefined }) {
    super(message);
    this.name = 'ApiError';
    this.type = type;
    this.status = status;
    this.position = position;
    this.retryAfter = extra?.retryAfter;
    this.field = extra?.field;
  }
}

/** Whether `e` is an aborted request (not an error to show). */
export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'AbortError';
}

/** The `sluice_csrf` cookie (the server's copy of the session's CSRF token). */
export function csrfCookie(): string | null {
  const m = /(?:^|;\s*)sluice_csrf=([^;]*)/.exec(globalThis.document?.cookie ?? '');
  return m?.[1] ? decodeURIComponent(m[1]) : null;
}

/** Request headers for the current credentials. */
export function authHeaders(method = 'GET'): Record<string, string> {
  const h: Record<string, string> = { Accept: 'application/json' };
  if (current?.kind === 'token') h['Authorization'] = `Bearer ${current.token}`;
  if (current?.kind === 'session' && method !== 'GET' && method !== 'HEAD') h[CSRF_HEADER] = csrfCookie() ?? current.csrf;
  return h;
}

/** Turns a non-2xx response into an [`ApiError`]. */
export async function errorOf(resp: Response): Promise<ApiError> {
  let body: Partial<ErrorBody> | null = null;
  try {
    body = (await resp.json()) as Partial<ErrorBody>;
  } catch {
    body = null;
  }
  const e = body?.error;
  const fallback: ErrorType = resp.status === 401 ? 'unauthorized' : resp.status === 404 ? 'not_found' : 'internal';
  return new ApiError(e?.type ?? fallback, e?.message ?? `HTTP ${resp.status}`, resp.status, e?.position, {
    retryAfter: e?.retry_after,
    field: e?.field,
  });
}

/** A JSON request; throws [`ApiError`]. A `401` also signs the tab out. */
export async function request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers = authHeaders(method);
  const init: RequestInit = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (signal) init.signal = signal;
  let resp: Response;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError('network', `cannot reach the server: ${String(e)}`, 0);
  }
  if (!resp.ok) {
    const err = await errorOf(resp);
    // An ended session or a revoked token: back to the login page. (Login's
    // own 401s are `invalid_credentials` / `invalid_code`.)
    if (err.type === 'unauthorized' && current) setCredentials(null);
    throw err;
  }
  if (resp.status === 204) return undefined as T;
  return (await resp.json()) as T;
}
