import { describe, expect, it } from 'vitest';
import { match, navigate, urlOf } from './router';

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
});
