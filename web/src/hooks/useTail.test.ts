import { describe, expect, it } from 'vitest';
import { rateOf } from './useTail';
import { ratePerSec } from './useNodeStats';

describe('rates', () => {
  it('counts arrivals in the window as events per second', () => {
    const now = 100_000;
    expect(rateOf([now - 6000, now - 4000, now - 1000, now], now, 5000)).toBe(0.6);
    expect(rateOf([], now)).toBe(0);
  });

  it('turns counter deltas into per-second rates and ignores resets', () => {
    expect(ratePerSec(100, 300, 2000)).toBe(100);
    expect(ratePerSec(300, 10, 2000)).toBe(0);
    expect(ratePerSec(1, 2, 0)).toBe(0);
  });
});
