import { describe, expect, it } from 'vitest';
import { readSearchUrl, searchUrl } from './Search';

describe('search URL', () => {
  it('round-trips the state and leaves defaults out', () => {
    const s = { q: 'level:"error"', range: { from: 'now-1h', to: 'now' }, cols: ['@host', 'status'] };
    const url = searchUrl(s);
    expect(url).toBe('/search?q=level%3A%22error%22&from=now-1h&cols=%40host%2Cstatus');
    expect(readSearchUrl(new URL(url, 'http://x').searchParams)).toEqual(s);
    expect(readSearchUrl(new URLSearchParams())).toEqual({ q: '', range: { from: 'now-15m', to: 'now' }, cols: [] });
  });
});
