import { afterEach, describe, expect, it, vi } from 'vitest';
import { mount, unmountAll } from '../testing';
import { match, navigate, urlOf, useLeaveGuard, useLocation } from './router';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

/** A page that shows its path and guards leaving while `dirty`. */
function Guarded({ dirty }: { dirty: boolean }) {
  const loc = useLocation();
  useLeaveGuard(dirty ? 'Unsaved changes. Leave?' : null);
  return <p>{loc.path}</p>;
}

/** What the browser does on Back: the URL changes, then `popstate`. */
function back(to: string): void {
  history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
}

describe('router', () => {
  it('matches patterns with params', () => {
    expect(match('/dashboards/:id', '/dashboards/a%20b')).toEqual({ id: 'a b' });
    expect(match('/dashboards/:id', '/dashboards')).toBeNull();
    expect(match('/search', '/search')).toEqual({});
    expect(match('/', '/')).toEqual({});
  });

  it('builds URLs without empty params and navigates', () => {
    expect(urlOf('/search', { q: 'a b', from: 'now-1h', cols: '' })).toBe('/search?q=a+b&from=now-1h');
    navigate('/search?q=x');
    expect(location.pathname).toBe('/search');
    expect(new URLSearchParams(location.search).get('q')).toBe('x');
  });

  it('asks before Back leaves a page with unsaved changes; "stay" puts its URL back (issue 22 item 6)', () => {
    navigate('/dashboards/7?edit=1');
    const asked: string[] = [];
    let answer = false;
    vi.stubGlobal('confirm', (q: string) => {
      asked.push(q);
      return answer;
    });
    const el = mount(<Guarded dirty />);
    back('/search');
    expect(asked).toEqual(['Unsaved changes. Leave?']);
    expect(location.pathname + location.search).toBe('/dashboards/7?edit=1');
    expect(el.textContent).toBe('/dashboards/7');
    answer = true;
    back('/search');
    expect(asked.length).toBe(2);
    expect(location.pathname).toBe('/search');
  });

  it('Back within the same page or without unsaved changes asks nothing', () => {
    const asked = vi.fn(() => false);
    vi.stubGlobal('confirm', asked);
    navigate('/dashboards/7');
    mount(<Guarded dirty={false} />);
    back('/live');
    expect(location.pathname).toBe('/live');
    unmountAll();
    navigate('/dashboards/8');
    mount(<Guarded dirty />);
    back('/dashboards/8?from=now-1h');
    expect(asked).not.toHaveBeenCalled();
  });
});
