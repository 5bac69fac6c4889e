import { describe, expect, it } from 'vitest';
import { bottomOf, hasOverlap, moveTo, resizeTo, settle, type Box } from './layout';

const byId = (bs: Box[]): Record<string, [number, number, number, number]> =>
  Object.fromEntries(bs.map((b) => [b.id, [b.x, b.y, b.w, b.h]]));

const two: Box[] = [
  { id: 'a', x: 0, y: 0, w: 6, h: 3 },
  { id: 'b', x: 6, y: 0, w: 6, h: 3 },
];

describe('grid layout', () => {
  it('pushes an overlapped panel down when another moves onto it', () => {
    const r = moveTo(two, 'b', 0, 0);
    expect(byId(r)).toEqual({ b: [0, 0, 6, 3], a: [0, 3, 6, 3] });
    expect(hasOverlap(r)).toBe(false);
  });

  it('clamps to the grid and floats panels up', () => {
    const r = moveTo(two, 'a', 20, 9);
    expect(byId(r)).toEqual({ a: [6, 3, 6, 3], b: [6, 0, 6, 3] });
    expect(byId(settle([{ id: 'x', x: 0, y: 7, w: 4, h: 2 }]))).toEqual({ x: [0, 0, 4, 2] });
  });

  it('resizes with minimums and without overlaps', () => {
    const r = resizeTo(two, 'a', 8, 1);
    expect(byId(r)).toEqual({ a: [0, 0, 8, 2], b: [6, 2, 6, 3] });
    expect(hasOverlap(r)).toBe(false);
    expect(bottomOf(r)).toBe(5);
  });

  it('never overlaps after random moves', () => {
    let boxes: Box[] = Array.from({ length: 6 }, (_v, i) => ({ id: String(i), x: (i % 3) * 4, y: Math.floor(i / 3) * 2, w: 4, h: 2 }));
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 200; i++) {
      const id = String(rnd(6));
      boxes = rnd(2) ? moveTo(boxes, id, rnd(12), rnd(8)) : resizeTo(boxes, id, 2 + rnd(10), 2 + rnd(4));
      expect(hasOverlap(boxes)).toBe(false);
      expect(boxes).toHaveLength(6);
    }
  });
});
