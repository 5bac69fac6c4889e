import { beforeEach, describe, expect, it } from 'vitest';
import { RECENT_QUERIES, recent, remember } from './recent';
import { applySuggestion, matchFields, tokenAt } from './suggest';

describe('tokenAt', () => {
  it('finds a field name being typed', () => {
    expect(tokenAt('err AND lev', 11)).toEqual({ kind: 'field', prefix: 'lev', start: 8, end: 11 });
    expect(tokenAt('(@ho', 4)).toEqual({ kind: 'field', prefix: '@ho', start: 1, end: 4 });
  });
  it('finds the value after field:', () => {
    expect(tokenAt('level:', 6)).toEqual({ kind: 'value', field: 'level', prefix: '', start: 6, end: 6 });
    expect(tokenAt('a AND service:"ap', 17)).toEqual({ kind: 'value', field: 'service', prefix: 'ap', start: 14, end: 17 });
  });
  it('offers nothing after a space, an operator or inside a phrase', () => {
    expect(tokenAt('level ', 6)).toBeNull();
    expect(tokenAt('a AND', 5)).toBeNull();
    expect(tokenAt('"failed pass', 12)).toBeNull();
  });
});

describe('suggestions', () => {
  it('matches field names by prefix, then by substring', () => {
    expect(matchFields('le', ['message', 'level', 'alert_level', 'host'])).toEqual(['level', 'alert_level']);
  });
  it('replaces the token: a field gets a colon, a value is quoted when it must be', () => {
    const t = tokenAt('err AND lev', 11);
    expect(t && applySuggestion('err AND lev', t, 'level')).toEqual({ text: 'err AND level:', caret: 14 });
    const v = tokenAt('service:a OR x', 9);
    expect(v && applySuggestion('service:a OR x', v, 'api gw')).toEqual({ text: 'service:"api gw" OR x', caret: 16 });
    const w = tokenAt('level:', 6);
    expect(w && applySuggestion('level:', w, 'error')).toEqual({ text: 'level:error ', caret: 12 });
  });
});

describe('recent', () => {
  beforeEach(() => localStorage.removeItem(RECENT_QUERIES));
  it('keeps the newest first, once each, at most max', () => {
    for (const q of ['a', 'b', 'a', 'c', '  ']) remember(RECENT_QUERIES, q, 2);
    expect(recent(RECENT_QUERIES)).toEqual(['c', 'a']);
  });
});
