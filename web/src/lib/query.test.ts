import { describe, expect, it } from 'vitest';
import { addFilter, allFieldsQuery, byteToCharIndex, closest, filterText, phrase, queryHints } from './query';

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

describe('zero-hit hints', () => {
  const known = ['status', 'level', 'http.method', 'message'];
  it('names a field no event has, with the closest known one', () => {
    expect(queryHints('stauts:500', known)).toEqual(['No event in this time range has the field “stauts” — did you mean “status”?']);
    expect(queryHints('NOT zzzzzz:1 AND _exists_:levle', known)).toEqual([
      'No event in this time range has the field “zzzzzz”.',
      'No event in this time range has the field “levle” — did you mean “level”?',
    ]);
    expect(closest('Level', known)).toBe('level');
  });

  it('knows the identity fields and the fields in range, and ignores phrases', () => {
    expect(queryHints('@group:acme AND http.method:GET AND status:[500 TO 599]', known)).toEqual([]);
    expect(queryHints('message:"see foo:bar and more"', known)).toEqual([]);
    expect(queryHints('vault', known)).toEqual(['Words without a field (“vault”) are searched in message only; to search another field, write field:word.']);
  });

  it('says lower-case operators are words', () => {
    expect(queryHints('sshd and failed or root', known)).toEqual([
      '“and” is searched as a word: operators are upper-case (AND).',
      '“or” is searched as a word: operators are upper-case (OR).',
      'Words without a field (“sshd”, “failed”, “root”) are searched in message only; to search another field, write field:word.',
    ]);
    expect(queryHints('level:error AND status:[500 TO 599]', known)).toEqual([]);
  });
});

describe('allFieldsQuery', () => {
  it('makes each free word and phrase search every string field, and leaves the rest alone', () => {
    expect(allFieldsQuery('vault', ['message', 'service', 'level'])).toBe('(message:vault OR service:vault OR level:vault)');
    expect(allFieldsQuery('@group:acme AND -vault "a b"', ['service', '@host', 'bad name'])).toBe(
      '@group:acme AND -(message:vault OR service:vault) (message:"a b" OR service:"a b")',
    );
    expect(allFieldsQuery('level:"x y" OR (err*)', ['level'])).toBe('level:"x y" OR ((message:err* OR level:err*))');
  });
  it('is null without a free word, and for ranges it does not read', () => {
    expect(allFieldsQuery('level:error AND NOT service:api', ['level'])).toBeNull();
    expect(allFieldsQuery('*', ['level'])).toBeNull();
    expect(allFieldsQuery('status:[400 TO 499] timeout', ['level'])).toBeNull();
  });
});
