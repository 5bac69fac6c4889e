import { afterEach, describe, expect, it, vi } from 'vitest';
import { resetBackend } from '../../api/dashboards';
import { click, flush, mount, stubFetch, typeInto, unmountAll } from '../../testing';
import { DashboardPage } from './DashboardPage';
import { board } from './fixtures';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
  resetBackend();
});

describe('one dashboard', () => {
  it('a read-only dashboard says whose it is and never reports unsaved changes', async () => {
    stubFetch(() => [200, { ...board, can_edit: false }]);
    const root = mount(<DashboardPage id={7} edit={false} />);
    await flush();
    expect(root.querySelector('h1')?.textContent).toBe('Web errors');
    expect(root.textContent).toContain('read-only (owned by admin)');
    typeInto(root.querySelector('[aria-label="Auto-refresh"]'), '30s');
    expect(root.textContent).not.toContain('Unsaved changes.');
    expect([...root.querySelectorAll('button')].some((b) => b.textContent === 'Edit')).toBe(false);
  });

  it('the owner edits the title, sees it unsaved, and saves it with the version it read', async () => {
    const calls = stubFetch((c) => [200, c.method === 'PUT' ? { ...board, ...(c.body as object), version: 4 } : board]);
    // Opened as the app opens a new dashboard; saving drops `?edit=1`
    // without asking anything (the changes are saved).
    history.replaceState(null, '', '/dashboards/7?edit=1');
    const asked = vi.fn(() => false);
    vi.stubGlobal('confirm', asked);
    const root = mount(<DashboardPage id={7} edit />);
    await flush();
    typeInto(root.querySelector('[aria-label="Dashboard title"]'), 'Web 5xx');
    expect(root.querySelector('[role=status]')?.textContent).toBe('Unsaved changes.');
    click([...root.querySelectorAll('button')].find((b) => b.textContent === 'Save') ?? null);
    await flush();
    const put = calls.find((c) => c.method === 'PUT');
    expect(put?.path).toBe('/api/v1/dashboards/7');
    expect(put?.body).toMatchObject({ title: 'Web 5xx', version: 3, panels: [] });
    expect(root.querySelector('h1')?.textContent).toBe('Web 5xx');
    expect(root.textContent).not.toContain('Unsaved changes.');
    expect(location.pathname + location.search).toBe('/dashboards/7');
    expect(asked).not.toHaveBeenCalled();
  });
});

describe('dashboard JSON and duplicate (issue 22, missing 8)', () => {
  it('offers the board as a JSON download; in edit mode a panel duplicates beside itself', async () => {
    const withPanel = { ...board, panels: [{ id: 'p1', title: 'Errors', chart: 'number' as const, query: '', size: 1, options: { metric: 'count' as const }, layout: { x: 0, y: 0, w: 6, h: 3 } }] };
    stubFetch((c) => [200, c.path.startsWith('/api/v1/dashboards') ? withPanel : { total: 0, took_ms: 1, hits: [], next: null }]);
    const root = mount(<DashboardPage id={7} edit />);
    await flush();
    const a = root.querySelector('a.export-json') as HTMLAnchorElement;
    expect(a.getAttribute('download')).toBe('web-errors.json');
    const json = JSON.parse(decodeURIComponent(a.getAttribute('href')?.replace('data:application/json;charset=utf-8,', '') ?? '')) as { panels: { title: string }[] };
    expect(json.panels.map((p) => p.title)).toEqual(['Errors']);
    click(root.querySelector('[aria-label="Duplicate panel Errors"]'));
    expect([...root.querySelectorAll('section.panel')].map((s) => s.getAttribute('aria-label'))).toEqual(['Errors', 'Errors (copy)']);
    expect(root.textContent).toContain('Unsaved changes.');
  });
});
