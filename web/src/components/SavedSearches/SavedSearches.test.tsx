import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mount, unmountAll } from '../../testing';
import type { SavedSearch } from '../../api/savedSearches';
import { SavedSearches, stateOf } from './SavedSearches';

const saved: SavedSearch = {
  id: 4,
  name: '5xx on web',
  description: '',
  owner: 'bob',
  query: 'status:>=500',
  from: 'now-1h',
  to: null,
  columns: ['@host', 'status'],
  sharing: { everyone: false, groups: ['ops'] },
  version: 1,
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
  can_edit: false,
};

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

const flush = (): Promise<void> => act(async () => new Promise((r) => setTimeout(r, 0)));

describe('SavedSearches', () => {
  it('reads a saved search as the search state, missing bounds as the defaults', () => {
    expect(stateOf(saved)).toEqual({ q: 'status:>=500', range: { from: 'now-1h', to: 'now' }, cols: ['@host', 'status'] });
  });

  it('lists the visible ones and opens one; saving posts the current state', async () => {
    const calls: { method: string; body: unknown }[] = [];
    vi.stubGlobal(
      'fetch',
      vi.fn((_url: string, init: RequestInit) => {
        calls.push({ method: init.method ?? 'GET', body: init.body ? JSON.parse(init.body as string) : null });
        const body = init.method === 'POST' ? { ...saved, id: 5, name: 'mine' } : { saved_searches: [saved] };
        return Promise.resolve(new Response(JSON.stringify(body), { status: init.method === 'POST' ? 201 : 200 }));
      }),
    );
    const onOpen = vi.fn();
    const current = { q: 'level:error', range: { from: 'now-7d', to: 'now' }, cols: ['service'] };
    const root = mount(<SavedSearches current={current} onOpen={onOpen} />);
    act(() => (root.querySelector('button') as HTMLButtonElement).click());
    await flush();
    expect(root.querySelector('li[data-saved="5xx on web"]')?.textContent).toContain('by bob');
    expect(root.querySelector('li[data-saved="5xx on web"] .danger')).toBeNull();
    const name = root.querySelector('input[name="saved-name"]') as HTMLInputElement;
    act(() => {
      name.value = 'mine';
      name.dispatchEvent(new Event('input', { bubbles: true }));
    });
    act(() => {
      (root.querySelector('form') as HTMLFormElement).dispatchEvent(new Event('submit', { cancelable: true }));
    });
    await flush();
    expect(calls[1]).toEqual({
      method: 'POST',
      body: { name: 'mine', description: '', query: 'level:error', from: 'now-7d', to: 'now', columns: ['service'], sharing: { everyone: false, groups: [] } },
    });
    expect(root.querySelector('[role=status]')?.textContent).toBe('Saved “mine”.');
    act(() => (root.querySelector('.saved-open') as HTMLButtonElement).click());
    expect(onOpen).toHaveBeenCalledWith(stateOf(saved));
  });
});
