import { describe, expect, it } from 'vitest';
import { ago, bytes, compact, exact, flatten, getPath, valueText } from './format';

describe('format', () => {
  it('writes counts exactly, grouped', () => {
    expect(exact(17_123)).toBe('17,123');
    expect(exact(999)).toBe('999');
    expect(exact(2_500_000)).toBe('2,500,000');
  });

  it('compacts numbers and bytes', () => {
    expect(compact(999)).toBe('999');
    expect(compact(12_345)).toBe('12.3k');
    expect(compact(2_500_000)).toBe('2.50M');
    expect(compact(1.5)).toBe('1.50');
    expect(bytes(512)).toBe('512 B');
    expect(bytes(3 * 1024 * 1024)).toBe('3.0 MiB');
  });

  it('flattens nested events to dotted paths and reads them back', () => {
    const ev = { a: 1, http: { status: 200, req: { method: 'GET' } }, tags: ['x'] };
    expect(flatten(ev)).toEqual([
      ['a', 1],
      ['http.status', 200],
      ['http.req.method', 'GET'],
      ['tags', ['x']],
    ]);
    expect(getPath(ev, 'http.req.method')).toBe('GET');
    expect(getPath({ 'a.b': 3 }, 'a.b')).toBe(3);
    expect(getPath(ev, 'http.nope')).toBeUndefined();
    expect(valueText(['x'])).toBe('["x"]');
    expect(valueText(null)).toBe('');
  });
  it('says how long ago a time was in its largest unit', () => {
    const now = 1_700_000_000_000;
    expect(ago(0, now)).toBe('never');
    expect(ago(now / 1000, now)).toBe('just now');
    expect(ago(now / 1000 - 42, now)).toBe('42 s ago');
    expect(ago(now / 1000 - 300, now)).toBe('5 min ago');
    expect(ago(now / 1000 - 3 * 3600, now)).toBe('3 h ago');
    expect(ago(now / 1000 - 2 * 86400, now)).toBe('2 d ago');
    expect(ago(now / 1000 + 5, now)).toBe('just now');
  });
});
