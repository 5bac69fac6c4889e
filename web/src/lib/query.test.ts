import { describe, expect, it } from 'vitest';
import { addFilter, byteToCharIndex, filterText, phrase } from './query';

describe('query building', () => {
  it('quotes phrases with escapes', () => {
    expect(phrase('a "b" \\c')).toBe('"a \\"b\\" \\\\c"');
  });

  it('adds a filter to empty, simple and OR queries', () => {
    expect(addFilter('', 'host', 'web-1')).toBe('host:"web-1"');
    expect(addFilter('*', 'host', 'web-1')).toBe('host:"web-1"');
    expect(addFilter('error', 'host', 'web-1')).toBe('error AND host:"web-1"');
    expect(addFilter('a OR b', 'level', 'warn', true)).toBe('(a OR b) AND NOT level:"warn"');
  });

  it('filters on scalars only', () => {
    expect(filterText(5)).toBe('5');
    expect(filterText(false)).toBe('false');
    expect(filterText({ a: 1 })).toBeNull();
  });

  it('maps byte offsets to string indexes', () => {
    expect(byteToCharIndex('abc', 2)).toBe(2);
    // 'é' is two bytes, '😀' four bytes and two UTF-16 units.
    expect(byteToCharIndex('é(x', 2)).toBe(1);
    expect(byteToCharIndex('😀 (', 5)).toBe(3);
    expect(byteToCharIndex('ab', 99)).toBe(2);
  });
});
