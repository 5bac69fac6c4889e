import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useSearch, type SearchState } from './useSearch';

afterEach(() => vi.unstubAllGlobals());

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await act(async () => await new Promise((r) => setTimeout(r, 0)));
};

describe('useSearch', () => {
  it('loads the first page, then appends the page after `next` until the last', async () => {
    const bodies: unknown[] = [];
    vi.stubGlobal('fetch', async (_url: string, init: RequestInit) => {
      const body = JSON.parse(String(init.body)) as { search_after: string | null };
      bodies.push(body);
      const page = body.search_after === null ? 1 : 2;
      const hits = [0, 1].map((i) => ({ id: `${page}-${i}`, event: {} }));
      return new Response(JSON.stringify({ total: 4, hits, next: page === 1 ? 'cursor-1' : null, took_ms: 1 }), { status: 200 });
    });
    let state: SearchState | null = null;
    function Probe() {
      state = useSearch({ query: 'x', from: 'now-1h', to: 'now', size: 2 }, 'k1');
      return null;
    }
    const el = document.createElement('div');
    act(() => render(<Probe />, el));
    await flush();
    expect(state!.hits.map((h) => h.id)).toEqual(['1-0', '1-1']);
    expect(state!.more).toBe(true);
    act(() => state!.loadMore());
    await flush();
    expect(state!.hits.map((h) => h.id)).toEqual(['1-0', '1-1', '2-0', '2-1']);
    expect(state!.more).toBe(false);
    expect(state!.total).toBe(4);
    expect(state!.answered?.query).toBe('x');
    expect(bodies).toEqual([
      { query: 'x', from: 'now-1h', to: 'now', size: 2, search_after: null },
      { query: 'x', from: 'now-1h', to: 'now', size: 2, search_after: 'cursor-1' },
    ]);
    render(null, el);
  });

  it('shows a parse error with its position and clears the hits', async () => {
    vi.stubGlobal('fetch', async () =>
      new Response(JSON.stringify({ error: { type: 'query_parse_error', message: 'unterminated phrase at position 3', position: 3 } }), { status: 400 }),
    );
    let state: SearchState | null = null;
    function Probe() {
      state = useSearch({ query: 'a "b' }, 'k2');
      return null;
    }
    const el = document.createElement('div');
    act(() => render(<Probe />, el));
    await flush();
    expect(state!.error?.type).toBe('query_parse_error');
    expect(state!.error?.position).toBe(3);
    expect(state!.hits).toEqual([]);
    expect(state!.total).toBeNull();
    expect(state!.answered).toBeNull();
    render(null, el);
  });
});
