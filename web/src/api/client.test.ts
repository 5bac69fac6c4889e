import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const KEY = 'sluice.credentials';
// A fresh copy of the module for each test: it reads the storage when loaded.
beforeEach(() => {
  sessionStorage.clear();
  localStorage.clear();
  vi.resetModules();
});
afterEach(() => {
  sessionStorage.clear();
  localStorage.clear();
  vi.resetModules();
});

describe('credentials across tabs', () => {
  it('a new tab takes over a session, never a token', async () => {
    localStorage.setItem(KEY, JSON.stringify({ kind: 'session', csrf: 'c', name: 'bob' }));
    expect((await import('./client')).credentials()).toEqual({ kind: 'session', csrf: 'c', name: 'bob' });
    vi.resetModules();
    sessionStorage.clear();
    localStorage.setItem(KEY, JSON.stringify({ kind: 'token', token: 't', name: 'x' }));
    expect((await import('./client')).credentials()).toBeNull();
  });

  it('keeps a session for other tabs and a token in this tab only; signing out clears the shared copy', async () => {
    const c = await import('./client');
    c.setCredentials({ kind: 'token', token: 'secret', name: 'x' });
    expect(localStorage.getItem(KEY)).toBeNull();
    expect(sessionStorage.getItem(KEY)).toContain('secret');
    c.setCredentials({ kind: 'session', csrf: 'c', name: 'bob' });
    expect(JSON.parse(localStorage.getItem(KEY) ?? 'null')).toEqual({ kind: 'session', csrf: 'c', name: 'bob' });
    c.setCredentials(null);
    expect(localStorage.getItem(KEY)).toBeNull();
    expect(sessionStorage.getItem(KEY)).toBeNull();
  });
});
