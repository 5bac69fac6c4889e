import { describe, expect, it } from 'vitest';
import { moveColumn, readSearchUrl, searchUrl } from './searchUrl';

describe('search URL', () => {
  it('round-trips the state and leaves defaults out', () => {
    const s = { q: 'level:"error"', range: { from: 'now-1h', to: 'now' }, cols: ['@host', 'status'] };
    const url = searchUrl(s);
    expect(url).toBe('/search?q=level%3A%22error%22&from=now-1h&cols=%40host%2Cstatus');
    expect(readSearchUrl(new URL(url, 'http://x').searchParams)).toEqual(s);
    expect(readSearchUrl(new URLSearchParams())).toEqual({ q: '', range: { from: 'now-15m', to: 'now' }, cols: [] });
  });

  it('keeps oldest-first and the auto-refresh period (issue 22, missing 6); ignores unknown ones', () => {
    const s = { q: '', range: { from: 'now-15m', to: 'now' }, cols: [], order: 'oldest' as const, refresh: '30s' as const };
    expect(searchUrl(s)).toBe('/search?order=oldest&refresh=30s');
    expect(readSearchUrl(new URLSearchParams('order=oldest&refresh=30s'))).toEqual(s);
    expect(readSearchUrl(new URLSearchParams('order=up&refresh=2s'))).toEqual({ q: '', range: { from: 'now-15m', to: 'now' }, cols: [] });
  });

  it('keeps a field sort (issue 22, missing 6) and ignores a malformed one', () => {
    const s = { q: '', range: { from: 'now-15m', to: 'now' }, cols: ['status'], sort: { field: 'status', desc: true } };
    expect(searchUrl(s)).toBe('/search?cols=status&sort=status%3Adesc');
    expect(readSearchUrl(new URL(searchUrl(s), 'http://x').searchParams)).toEqual(s);
    const plain = { q: '', range: { from: 'now-15m', to: 'now' }, cols: [] };
    expect(readSearchUrl(new URLSearchParams('sort=status'))).toEqual(plain);
    expect(readSearchUrl(new URLSearchParams('sort=%40timestamp%3Aasc'))).toEqual(plain);
  });

  it('moves a column left or right, not past the ends', () => {
    expect(moveColumn(['a', 'b', 'c'], 'b', -1)).toEqual(['b', 'a', 'c']);
    expect(moveColumn(['a', 'b', 'c'], 'b', 1)).toEqual(['a', 'c', 'b']);
    expect(moveColumn(['a', 'b', 'c'], 'a', -1)).toEqual(['a', 'b', 'c']);
    expect(moveColumn(['a', 'b', 'c'], 'x', 1)).toEqual(['a', 'b', 'c']);
  });
});
