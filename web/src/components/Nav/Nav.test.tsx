import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import type { Permission } from '../../api/auth';
import { Nav } from './Nav';

describe('Nav', () => {
  it('shows only the pages the caller may use and navigates without reloading', () => {
    const el = document.createElement('div');
    const perms: Permission[] = ['logs:read'];
    const onSignOut = vi.fn();
    act(() => render(<Nav path="/search" user="bob" can={(p) => perms.includes(p)} onSignOut={onSignOut} />, el));
    expect([...el.querySelectorAll('nav a')].map((a) => a.textContent)).toEqual(['Search', 'Dashboards', 'Live']);
    expect(el.querySelector('nav a.active')?.textContent).toBe('Search');
    act(() => (el.querySelector('a[href="/live"]') as HTMLAnchorElement).click());
    expect(location.pathname).toBe('/live');
    act(() => (el.querySelector('button') as HTMLButtonElement).click());
    expect(onSignOut).toHaveBeenCalled();
  });
});
