import { describe, expect, it } from 'vitest';
import { formatTime } from '../../lib/time';
import { bucketTip, histogramData, snapSelection, xRange } from './Histogram';

describe('Histogram', () => {
  it('turns buckets into uPlot columns', () => {
    expect(histogramData([{ key: 1000, count: 3 }, { key: 2000, count: 0 }])).toEqual([
      [1000, 2000],
      [3, 0],
    ]);
  });

  it('snaps a drag outwards to whole buckets', () => {
    expect(snapSelection(61_000, 179_000, 60_000)).toEqual([60_000, 180_000]);
    expect(snapSelection(60_000, 60_000, 60_000)).toEqual([60_000, 120_000]);
    expect(snapSelection(5, 7, 0)).toEqual([5, 7]);
  });

  it('ends the x range with the last bucket, so its bar shows', () => {
    expect(xRange(60_000, 180_000, 30_000)).toEqual([60_000, 210_000]);
    expect(xRange(null, null, 30_000)).toEqual([null, null]);
  });
});

describe('histogram tooltip', () => {
  it('says the bucket time with its zone and the exact count', () => {
    const key = Date.UTC(2026, 10, 26, 22, 51);
    expect(bucketTip({ key, count: 12_345 })).toBe(`${formatTime(key)} — 12,345 hits`);
    expect(bucketTip({ key, count: 1 })).toBe(`${formatTime(key)} — 1 hit`);
    expect(bucketTip(undefined)).toBe('');
  });
});
