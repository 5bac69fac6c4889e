// A small history-API router: the URL is the state (shareable links), pages
// read it with `useLocation()` and change it with `navigate()`. The server
// answers every client route with index.html (crates/api/src/ui.rs).
import { useEffect, useState } from 'preact/hooks';

/** The current path and query. */
export interface Loc {
  path: string;
  params: URLSearchParams;
}

const subscribers = new Set<() => void>();

function current(): Loc {
  return { path: location.pathname, params: new URLSearchParams(location.search) };
}

/** The question to ask before leaving the current page, if any (see [`useLeaveGuard`]). */
let leaveQuestion: string | null = null;
/** The URL of the page the question guards (where Back returns to on "stay"). */
let guardedUrl: string | null = null;

/** The browser's Back/Forward: asks the leave question first (when the
 * path changes); on "stay", puts the guarded page's URL back. One listener
 * for the whole app, installed by the first [`useLocation`]. */
function onPopState(): void {
  if (leaveQuestion !== null && guardedUrl !== null && new URL(guardedUrl, location.href).pathname !== location.pathname && !confirm(leaveQuestion)) {
    history.pushState(null, '', guardedUrl);
    return;
  }
  for (const s of subscribers) s();
}
let popStateListening = false;

/** Goes to `url` (path + query); `replace` does not add a history entry.
 * Leaving the page (another path) while a [`useLeaveGuard`] is armed asks
 * first, and stays when the user declines. */
export function navigate(url: string, replace = false): void {
  if (url === location.pathname + location.search) return;
  if (leaveQuestion !== null && new URL(url, location.href).pathname !== location.pathname && !confirm(leaveQuestion)) return;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  // A change within the guarded page (its query) is where "stay" returns.
  if (leaveQuestion !== null) guardedUrl = location.pathname + location.search;
  for (const s of subscribers) s();
}

/** Builds `path?query` from params, dropping empty values. */
export function urlOf(path: string, params: Record<string, string | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') p.set(k, v);
  const q = p.toString();
  return q ? `${path}?${q}` : path;
}

/** The location, re-rendering on every change. */
export function useLocation(): Loc {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = (): void => setLoc(current());
    subscribers.add(update);
    if (!popStateListening) {
      addEventListener('popstate', onPopState);
      popStateListening = true;
    }
    return () => {
      subscribers.delete(update);
    };
  }, []);
  return loc;
}

/** Matches `/dashboards/:id` style patterns; returns the params or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split('/').filter(Boolean);
  const b = path.split('/').filter(Boolean);
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    const seg = a[i] ?? '';
    const val = b[i] ?? '';
    if (seg.startsWith(':')) out[seg.slice(1)] = decodeURIComponent(val);
    else if (seg !== val) return null;
  }
  return out;
}

/**
 * While `question` is not null (unsaved changes), leaving the page asks it:
 * an in-app navigation or the browser's Back/Forward with `confirm()`, a
 * reload or closing the tab with the browser's own "leave site?" dialog
 * (`beforeunload`).
 */
export function useLeaveGuard(question: string | null): void {
  useEffect(() => {
    if (question === null) return undefined;
    leaveQuestion = question;
    guardedUrl = location.pathname + location.search;
    const onBeforeUnload = (e: BeforeUnloadEvent): void => {
      e.preventDefault();
      // Older browsers show the dialog only when returnValue is set.
      e.returnValue = question;
    };
    addEventListener('beforeunload', onBeforeUnload);
    return () => {
      if (leaveQuestion === question) {
        leaveQuestion = null;
        guardedUrl = null;
      }
      removeEventListener('beforeunload', onBeforeUnload);
    };
  }, [question]);
}
