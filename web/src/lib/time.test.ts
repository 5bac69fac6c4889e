import { describe, expect, it } from 'vitest';
import { absolute, fromLocalInput, isRelative, label, resolve, toLocalInput } from './time';

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
});
