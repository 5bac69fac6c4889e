import { useLocation } from '../../lib/router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { click, flush, mount, stubFetch, typeInto, unmountAll } from '../../testing';
import { SearchPage } from './SearchPage';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
  history.replaceState(null, '', '/');
});

function Routed() {
  return <SearchPage loc={useLocation()} />;
}

const hit = (id: string, message: string) => ({ id, event: { '@timestamp': '2024-01-01T00:00:00Z', message, status: 1, level: 'x' } });

describe('SearchPage (issue 22, missing 6 and 10)', () => {
  it('asks oldest first when chosen, keeps it in the URL; reorders columns; hides the field list', async () => {
    const calls = stubFetch((c) => {
      if (c.path.startsWith('/api/v1/fields')) return [200, { fields: [] }];
      if (c.path === '/api/v1/aggregate') return [200, { total: 1, took_ms: 1, aggs: {} }];
      return [200, { total: 1, took_ms: 1, next: null, hits: [hit('a', 'one')] }];
    });
    history.replaceState(null, '', '/search?cols=status,level');
    const el = mount(<Routed />);
    await flush();
    const searches = () => calls.filter((c) => c.path === '/api/v1/search');
    expect((searches()[0]?.body as { order: string }).order).toBe('newest');
    typeInto(el.querySelector('[aria-label="Sort"]'), 'oldest');
    await flush();
    expect(location.search).toBe('?cols=status%2Clevel&order=oldest');
    expect((searches().at(-1)?.body as { order: string }).order).toBe('oldest');
    click(el.querySelector('[aria-label="Move column level left"]'));
    await flush();
    expect(new URLSearchParams(location.search).get('cols')).toBe('level,status');
    expect([...el.querySelectorAll('thead th')].map((t) => t.textContent?.replace(/[‹›×]/g, '').trim())).toEqual(['Time', 'level', 'status']);
    typeInto(el.querySelector('[aria-label="Auto-refresh"]'), '5s');
    expect(new URLSearchParams(location.search).get('refresh')).toBe('5s');
    const toggle = el.querySelector('.sidebar-toggle');
    expect(toggle?.getAttribute('aria-expanded')).toBe('true');
    click(toggle);
    expect(toggle?.getAttribute('aria-expanded')).toBe('false');
    expect(el.querySelector('.search-body')?.classList.contains('no-sidebar')).toBe(true);
  });
});
