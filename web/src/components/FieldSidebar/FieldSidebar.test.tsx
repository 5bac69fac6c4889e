import { render } from 'preact';
import { act } from 'preact/test-utils';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FieldSidebar, sortFields } from './FieldSidebar';

function respond(body: unknown): Response {
  return new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } });
}

afterEach(() => vi.unstubAllGlobals());

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await act(async () => await new Promise((r) => setTimeout(r, 0)));
};

describe('FieldSidebar', () => {
  it('sorts identity fields first', () => {
    expect(sortFields([{ name: 'b', types: ['keyword'] }, { name: '@host', types: ['keyword'] }, { name: 'a', types: ['text'] }]).map((f) => f.name)).toEqual([
      '@host',
      'a',
      'b',
    ]);
  });

  it('lists fields and shows top values from a terms aggregation for the current search', async () => {
    const calls: { url: string; body: unknown }[] = [];
    vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
      calls.push({ url, body: init.body ? JSON.parse(String(init.body)) : null });
      // The fields of the sidebar's time range (issue 22: not a sample of the newest events).
      if (url === '/api/v1/fields?from=now-1h&to=now') return respond({ fields: [{ name: 'level', types: ['keyword'] }, { name: '@timestamp', types: ['date'] }] });
      // The hits that have the field: 8 of the 10.
      if (String(init.body).includes('_exists_:level')) return respond({ total: 8, took_ms: 1, aggs: {} });
      return respond({ total: 10, took_ms: 1, aggs: { top: { type: 'terms', buckets: [{ key: 'error', count: 7 }, { key: 'warn', count: 2 }], other: 1 } } });
    });
    const el = document.createElement('div');
    const onFilter = vi.fn();
    act(() => render(<FieldSidebar query="svc:api" range={{ from: 'now-1h', to: 'now' }} columns={[]} onFilter={onFilter} onToggleColumn={() => {}} />, el));
    await flush();
    expect([...el.querySelectorAll('.field-name')].map((b) => b.textContent)).toEqual(['k level']);
    act(() => (el.querySelector('.field-name') as HTMLButtonElement).click());
    await flush();
    expect(calls.slice(1)).toEqual([
      { url: '/api/v1/aggregate', body: { query: 'svc:api', from: 'now-1h', to: 'now', aggs: { top: { type: 'terms', field: 'level', size: 5 } } } },
      { url: '/api/v1/aggregate', body: { query: '(svc:api) AND _exists_:level', from: 'now-1h', to: 'now', aggs: {} } },
    ]);
    const values = [...el.querySelectorAll('.top-values li')].map((li) => li.textContent);
    expect(values).toEqual(['in 8 of 10 hits (80%)', 'error7', 'warn2', 'other: 1']);
    // Bars are shares of the hits that have the field (7 of 8), not of all hits (7 of 10).
    expect((el.querySelector('.top-values .bar') as HTMLElement).style.width).toBe('88%');
    act(() => (el.querySelector('.top-values button') as HTMLButtonElement).click());
    expect(onFilter).toHaveBeenCalledWith('level', 'error', false);
  });
});

describe('FieldSidebar coverage (issue 22, missing 7)', () => {
  it('shows the share of the hits shown that have each field, and lists only those on request', async () => {
    vi.stubGlobal('fetch', async () =>
      respond({ fields: [{ name: 'level', types: ['keyword'] }, { name: 'block_id', types: ['keyword'] }, { name: 'http.status', types: ['number'] }] }),
    );
    const hits = [
      { id: '1', event: { level: 'error', http: { status: 500 } } },
      { id: '2', event: { level: 'info' } },
      { id: '3', event: { level: null, message: 'x' } },
      { id: '4', event: { level: 'warn' } },
    ];
    const el = document.createElement('div');
    act(() => render(<FieldSidebar query="" range={{ from: 'now-1h', to: 'now' }} columns={[]} onFilter={() => {}} onToggleColumn={() => {}} hits={hits} />, el));
    await flush();
    const rows = () => [...el.querySelectorAll('.field-row')].map((r) => `${r.querySelector('.field-name')?.textContent ?? ''} ${r.querySelector('.coverage-pct')?.textContent ?? ''}`);
    expect(rows()).toEqual(['k block_id 0%', 'n http.status 25%', 'k level 75%']);
    expect(el.querySelector('.in-hits-only')?.textContent).toBe(' Only fields in the 4 hits shown');
    act(() => {
      const box = el.querySelector('.in-hits-only input') as HTMLInputElement;
      box.checked = true;
      box.dispatchEvent(new Event('change', { bubbles: true }));
    });
    expect(rows()).toEqual(['n http.status 25%', 'k level 75%']);
    act(() => render(null, el));
  });
});

describe('FieldSidebar visualize (issue 22, missing 7)', () => {
  it('an opened field offers "Visualize on a new dashboard"; message does not', async () => {
    vi.stubGlobal('fetch', async (url: string) =>
      url.startsWith('/api/v1/fields') ? respond({ fields: [{ name: 'level', types: ['keyword'] }, { name: 'message', types: ['text'] }] }) : respond({ total: 0, took_ms: 1, aggs: { top: { type: 'terms', buckets: [], other: 0 } } }),
    );
    const onVisualize = vi.fn();
    const el = document.createElement('div');
    act(() => render(<FieldSidebar query="" range={{ from: 'now-1h', to: 'now' }} columns={[]} onFilter={() => {}} onToggleColumn={() => {}} onVisualize={onVisualize} />, el));
    await flush();
    const names = [...el.querySelectorAll('.field-name')] as HTMLButtonElement[];
    act(() => names[1]?.click());
    expect(el.querySelector('.visualize')).toBeNull();
    act(() => names[0]?.click());
    act(() => (el.querySelector('[aria-label="Visualize level"]') as HTMLButtonElement).click());
    expect(onVisualize).toHaveBeenCalledWith('level');
    act(() => render(null, el));
  });
});
