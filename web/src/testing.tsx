// Helpers for the Vitest component tests (never imported by the app): mount
// a component into the document, and unmount everything after each test.
import { render, type ComponentChild } from 'preact';
import { act } from 'preact/test-utils';
import { vi } from 'vitest';

const mounted: HTMLElement[] = [];

/** Renders `vnode` into a fresh element of the document; returns the element. */
export function mount(vnode: ComponentChild): HTMLElement {
  const el = document.createElement('div');
  document.body.appendChild(el);
  mounted.push(el);
  act(() => render(vnode, el));
  return el;
}

/** Unmounts and removes everything [`mount`] rendered. */
export function unmountAll(): void {
  for (const el of mounted.splice(0)) {
    // Inside act(): the unmounted hooks' effect cleanups run now, not after
    // the next test has started.
    act(() => render(null, el));
    el.remove();
  }
}

/** One request a stubbed `fetch` saw. */
export interface Call {
  method: string;
  /** Path and query, e.g. `/api/v1/users?x=1`. */
  path: string;
  body: unknown;
}

/** Lets pending promises and effects run. */
export const flush = (): Promise<void> => act(async () => new Promise((r) => setTimeout(r, 0)));

/**
 * Stubs the global `fetch` (undo with `vi.unstubAllGlobals()`): every
 * request is recorded and answered by `answer(call)` → `[status, json]`
 * (status 204 answers no body). Returns the recorded calls.
 */
export function stubFetch(answer: (c: Call) => [number, unknown]): Call[] {
  const calls: Call[] = [];
  vi.stubGlobal('fetch', (url: string, init: RequestInit = {}) => {
    const u = new URL(url, 'http://localhost');
    const c: Call = { method: init.method ?? 'GET', path: u.pathname + u.search, body: typeof init.body === 'string' ? JSON.parse(init.body) : null };
    calls.push(c);
    const [status, json] = answer(c);
    return Promise.resolve(new Response(status === 204 ? null : JSON.stringify(json), { status }));
  });
  return calls;
}

/** Types `value` into the input or select `el` as a user would. */
export function typeInto(el: Element | null, value: string): void {
  if (!(el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement)) throw new Error(`not an input: ${String(el)}`);
  act(() => {
    el.value = value;
    el.dispatchEvent(new Event(el instanceof HTMLSelectElement ? 'change' : 'input', { bubbles: true }));
  });
}

/** Clicks `el` (a button or link). */
export function click(el: Element | null): void {
  if (!(el instanceof HTMLElement)) throw new Error(`nothing to click: ${String(el)}`);
  act(() => el.click());
}

/** Submits the form `el` as pressing Enter or its submit button would. */
export function submit(el: Element | null): void {
  if (!(el instanceof HTMLFormElement)) throw new Error(`not a form: ${String(el)}`);
  act(() => {
    el.dispatchEvent(new Event('submit', { cancelable: true }));
  });
}
