import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import type { Hit } from '../../api/types';
import { ResultList, identity, summary } from './ResultList';

const hits: Hit[] = [
  { id: 'b', event: { '@timestamp': '2024-01-01T00:00:02Z', '@group': 'acme', '@host': 'h1', message: 'second', status: 500 } },
  { id: 'a', event: { '@timestamp': '2024-01-01T00:00:01Z', '@group': 'acme', '@host': 'h2', message: 'first', status: 200 } },
];

describe('ResultList', () => {
  it('shows one row per hit, expands one, and offers more pages', () => {
    const el = document.createElement('div');
    const onMore = vi.fn();
    const onFilter = vi.fn();
    act(() =>
      render(
        <ResultList hits={hits} columns={[]} more loading={false} onMore={onMore} onFilter={onFilter} onToggleColumn={() => {}} />,
        el,
      ),
    );
    expect(el.querySelectorAll('tr.hit')).toHaveLength(2);
    expect(el.querySelector('tr.hit .summary')?.textContent).toBe('acme/h1 second');
    act(() => (el.querySelector('tr.hit button.expand') as HTMLButtonElement).click());
    expect(el.querySelectorAll('.event-detail')).toHaveLength(1);
    act(() => (el.querySelector('[data-field=status] .value-link') as HTMLButtonElement).click());
    expect(onFilter).toHaveBeenCalledWith('status', '500', false);
    act(() => (el.querySelector('.list-end button') as HTMLButtonElement).click());
    expect(onMore).toHaveBeenCalledTimes(1);
  });

  it('shows chosen columns instead of the summary', () => {
    const el = document.createElement('div');
    act(() =>
      render(
        <ResultList hits={hits} columns={['status']} more={false} loading={false} onMore={() => {}} onFilter={() => {}} onToggleColumn={() => {}} />,
        el,
      ),
    );
    expect([...el.querySelectorAll('tr.hit td:last-child')].map((t) => t.textContent)).toEqual(['500', '200']);
    expect(el.querySelector('.list-end')?.textContent).toBe('End of results');
  });

  it('sorts by a column when its name is clicked and marks the sorted one (issue 22, missing 6)', () => {
    const el = document.createElement('div');
    const onSort = vi.fn();
    const list = (sort: { field: string; desc: boolean } | null) => (
      <ResultList hits={hits} columns={['status', '@host']} more={false} loading={false} onMore={() => {}} onFilter={() => {}} onToggleColumn={() => {}} sort={sort} onSort={onSort} />
    );
    act(() => render(list(null), el));
    expect(el.querySelector('th[aria-sort]')).toBeNull();
    act(() => (el.querySelector('th button.sort') as HTMLButtonElement).click());
    expect(onSort).toHaveBeenCalledWith('status');
    act(() => render(list({ field: '@host', desc: true }), el));
    const th = el.querySelector('th[aria-sort]');
    expect(th?.getAttribute('aria-sort')).toBe('descending');
    expect(th?.querySelector('button.sort')?.textContent).toBe('@host ▼');
  });

  it('summarises events without a message and their identity', () => {
    expect(summary({ '@group': 'g', a: 1 })).toBe('{"a":1}');
    expect(identity({ '@group': 'g', '@subgroup': '', '@host': 'h' })).toBe('g/h');
    expect(identity({ '@group': 'g', '@subgroup': 'web' })).toBe('g/web');
  });
});

describe('ResultList column order (issue 22, missing 6)', () => {
  it('offers to move each column left or right, not past the ends', () => {
    const el = document.createElement('div');
    const onMove = vi.fn();
    act(() =>
      render(
        <ResultList hits={hits} columns={['status', '@host', 'message']} more={false} loading={false} onMore={() => {}} onFilter={() => {}} onToggleColumn={() => {}} onMoveColumn={onMove} />,
        el,
      ),
    );
    const labels = [...el.querySelectorAll('thead button[aria-label^="Move"]')].map((b) => b.getAttribute('aria-label'));
    expect(labels).toEqual(['Move column status right', 'Move column @host left', 'Move column @host right', 'Move column message left']);
    act(() => (el.querySelector('[aria-label="Move column @host left"]') as HTMLButtonElement).click());
    expect(onMove).toHaveBeenCalledWith('@host', -1);
    expect([...el.querySelectorAll('tr.hit')[0]?.querySelectorAll('td') ?? []].slice(1).map((t) => t.textContent)).toEqual(['500', 'h1', 'second']);
  });
});
