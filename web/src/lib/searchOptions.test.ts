import { describe, expect, it } from 'vitest';
import { nextSort, parseSort, refreshMs, sortParam } from './searchOptions';

describe('search options', () => {
  it('reads and writes a field sort; @timestamp and malformed ones are not field sorts', () => {
    expect(parseSort('http.status:desc')).toEqual({ field: 'http.status', desc: true });
    expect(parseSort('a:b:asc')).toEqual({ field: 'a:b', desc: false });
    expect(parseSort('status')).toBeNull();
    expect(parseSort(':asc')).toBeNull();
    expect(parseSort('@timestamp:asc')).toBeNull();
    expect(parseSort(null)).toBeNull();
    expect(sortParam({ field: 'status', desc: false })).toBe('status:asc');
  });

  it('cycles a column header: ascending, descending, back to time order', () => {
    const asc = nextSort(null, 'status');
    expect(asc).toEqual({ field: 'status', desc: false });
    const desc = nextSort(asc, 'status');
    expect(desc).toEqual({ field: 'status', desc: true });
    expect(nextSort(desc, 'status')).toBeNull();
    expect(nextSort(desc, '@host')).toEqual({ field: '@host', desc: false });
  });

  it('knows the refresh periods', () => {
    expect(refreshMs('5s')).toBe(5000);
    expect(refreshMs('1m')).toBe(60_000);
  });
});
