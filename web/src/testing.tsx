// Helpers for the Vitest component tests (never imported by the app): mount
// a component into the document, and unmount everything after each test.
import { render, type ComponentChild } from 'preact';
import { act } from 'preact/test-utils';

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
    render(null, el);
    el.remove();
  }
}
