import { afterEach, describe, expect, it, vi } from 'vitest';
import { flush, mount, stubFetch, unmountAll } from '../../testing';
import { AdminPage, TABS } from './AdminPage';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

describe('Administration page', () => {
  it('opens the tab named in the URL, users otherwise', async () => {
    const calls = stubFetch((c) => [200, c.path.startsWith('/api/v1/groups') ? { groups: [] } : { users: [] }]);
    const groups = mount(<AdminPage loc={{ path: '/admin', params: new URLSearchParams('tab=groups') }} />);
    await flush();
    expect(groups.querySelector('[role=tab][aria-selected=true]')?.textContent).toBe('Groups');
    expect(groups.querySelector('section')?.getAttribute('aria-label')).toBe('Groups');
    const fallback = mount(<AdminPage loc={{ path: '/admin', params: new URLSearchParams('tab=nope') }} />);
    await flush();
    expect(fallback.querySelector('section')?.getAttribute('aria-label')).toBe('Users');
    expect(calls.map((c) => c.path)).toEqual(['/api/v1/groups', '/api/v1/users']);
    expect([...groups.querySelectorAll('[role=tab]')].map((t) => t.textContent)).toEqual(['Users', 'Groups', 'Assignments', 'LDAP & policy', 'Audit']);
    expect(TABS.length).toBe(5);
  });
});
