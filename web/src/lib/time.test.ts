import { describe, expect, it } from 'vitest';
import { absolute, fromLocalInput, isRelative, label, parseTyped, resolve, shift, thisWeek, toLocalInput, today, zoomOut } from './time';

const NOW = Date.UTC(2024, 4, 1, 12, 0, 0);

describe('time ranges', () => {
  it('resolves the API forms', () => {
    expect(resolve('now', NOW)).toBe(NOW);
    expect(resolve('now-15m', NOW)).toBe(NOW - 900_000);
    expect(resolve('now-7d', NOW)).toBe(NOW - 7 * 86_400_000);
    expect(resolve('1714564800000', NOW)).toBe(1714564800000);
    expect(resolve('2024-05-01T12:00:00Z', NOW)).toBe(NOW);
    expect(resolve('yesterday', NOW)).toBeNaN();
  });

  it('labels relative and absolute ranges', () => {
    expect(label({ from: 'now-1h', to: 'now' })).toBe('Last 1 hour');
    expect(label({ from: 'now-3h', to: 'now' })).toBe('Since now-3h');
    expect(label(absolute(NOW, NOW + 1000))).toContain('→');
    expect(isRelative({ from: 'now-1h', to: 'now' })).toBe(true);
    expect(isRelative(absolute(NOW, NOW))).toBe(false);
  });

  it('round-trips datetime-local values to the second', () => {
    const ms = Date.UTC(2024, 0, 2, 3, 4, 5);
    expect(fromLocalInput(toLocalInput(ms))).toBe(ms);
  });

  it('parses typed ranges (issue 22, missing 5)', () => {
    expect(parseTyped(' now-2h ', NOW)).toEqual({ from: 'now-2h', to: 'now' });
    expect(parseTyped('now-7d to now-1d', NOW)).toEqual({ from: 'now-7d', to: 'now-1d' });
    expect(parseTyped('2024-05-01T10:00:00Z TO 2024-05-01T11:00:00Z', NOW)).toEqual({ from: '2024-05-01T10:00:00Z', to: '2024-05-01T11:00:00Z' });
    expect(parseTyped('now-1d to now-2d', NOW)).toBeNull();
    expect(parseTyped('now-2y', NOW)).toBeNull();
    expect(parseTyped('', NOW)).toBeNull();
  });

  it('today and this week start at local midnight (a Monday for the week)', () => {
    const t = new Date(Date.parse(today(NOW).from));
    expect([t.getHours(), t.getMinutes(), t.getDate()]).toEqual([0, 0, new Date(NOW).getDate()]);
    const w = new Date(Date.parse(thisWeek(NOW).from));
    expect([w.getDay(), w.getHours()]).toEqual([1, 0]);
    expect(NOW - w.getTime()).toBeLessThan(7 * 864e5);
    expect(label(today(NOW), NOW)).toBe('Today');
    expect(label(thisWeek(NOW), NOW)).toBe('This week');
  });

  it('shifts by the length and zooms out to twice the length', () => {
    expect(shift({ from: 'now-1h', to: 'now' }, -1, NOW)).toEqual(absolute(NOW - 2 * 36e5, NOW - 36e5));
    expect(shift(absolute(NOW - 3 * 36e5, NOW - 2 * 36e5), 1, NOW)).toEqual(absolute(NOW - 2 * 36e5, NOW - 36e5));
    expect(zoomOut({ from: 'now-15m', to: 'now' }, NOW)).toEqual({ from: 'now-30m', to: 'now' });
    expect(zoomOut(absolute(NOW - 4 * 36e5, NOW - 2 * 36e5), NOW)).toEqual(absolute(NOW - 5 * 36e5, NOW - 36e5));
    // Never past now: the extra goes before.
    expect(zoomOut(absolute(NOW - 36e5, NOW), NOW)).toEqual(absolute(NOW - 2 * 36e5, NOW));
  });
});
