import { afterEach, describe, expect, it, vi } from 'vitest';
import { resetBackend } from '../../api/dashboards';
import { click, flush, mount, stubFetch, unmountAll } from '../../testing';
import { DashboardListPage } from './DashboardList';
import { board } from './fixtures';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
  resetBackend();
});

describe('dashboard list', () => {
  it('lists dashboards with owner and sharing; delete asks, calls the API and reloads', async () => {
    let gone = false;
    const calls = stubFetch((c) => {
      if (c.method === 'DELETE') {
        gone = true;
        return [204, null];
      }
      return [200, { dashboards: gone ? [] : [board, { ...board, id: 8, title: 'Theirs', owner: 'carol', can_edit: false, sharing: { everyone: false, groups: ['ops'] } }] }];
    });
    vi.stubGlobal('confirm', () => true);
    const root = mount(<DashboardListPage />);
    await flush();
    const items = [...root.querySelectorAll('.dashboard-list li')].map((li) => li.textContent);
    expect(items).toEqual(['Web errors by adminshareddelete', 'Theirs by carolops']);
    click(root.querySelector('[aria-label="Delete Web errors"]'));
    await flush();
    await flush();
    expect(calls.map((c) => `${c.method} ${c.path}`)).toEqual(['GET /api/v1/dashboards', 'DELETE /api/v1/dashboards/7', 'GET /api/v1/dashboards']);
    expect(root.querySelector('.dashboard-list')?.textContent).toBe('No dashboards yet.');
  });
});
