import { describe, expect, it } from 'vitest';
import { bottomOf, firstFreeSlot, hasOverlap, moveTo, resizeTo, settle, step, type Box } from './layout';

const byId = (bs: Box[]): Record<string, [number, number, number, number]> =>
  Object.fromEntries(bs.map((b) => [b.id, [b.x, b.y, b.w, b.h]]));

const two: Box[] = [
  { id: 'a', x: 0, y: 0, w: 6, h: 3 },
  { id: 'b', x: 6, y: 0, w: 6, h: 3 },
];

describe('grid layout', () => {
  it('places new panels side by side, then on the next free row (issue 22)', () => {
    expect(firstFreeSlot([], 6, 3)).toEqual({ x: 0, y: 0 });
    const one: Box[] = [{ id: 'a', x: 0, y: 0, w: 6, h: 3 }];
    expect(firstFreeSlot(one, 6, 3)).toEqual({ x: 6, y: 0 });
    const two: Box[] = [...one, { id: 'b', x: 6, y: 0, w: 6, h: 3 }];
    expect(firstFreeSlot(two, 6, 3)).toEqual({ x: 0, y: 3 });
    // A hole to the right of a narrow panel is used.
    expect(firstFreeSlot([{ id: 'a', x: 0, y: 0, w: 4, h: 3 }, { id: 'b', x: 0, y: 3, w: 12, h: 2 }], 6, 3)).toEqual({ x: 4, y: 0 });
    // Wider than the grid: clamped, below everything.
    expect(firstFreeSlot(two, 20, 3)).toEqual({ x: 0, y: 3 });
  });

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

  it('never overlaps nor leaves holes after random moves', () => {
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
      // No holes: every box sits on row 0 or right below another.
      const floating = boxes.filter((b) => b.y > 0 && !hasOverlap([...boxes.filter((o) => o.id !== b.id), { ...b, y: b.y - 1 }]));
      expect(floating).toEqual([]);
    }
  });

  it('steps a box with the keyboard past the box below it, and back', () => {
    const stacked: Box[] = [
      { id: 'a', x: 0, y: 0, w: 6, h: 3 },
      { id: 'b', x: 0, y: 3, w: 6, h: 3 },
    ];
    // y + 1 alone would float straight back up: the step goes on until a moves.
    expect(byId(moveTo(stacked, 'a', 0, 1))).toEqual(byId(stacked));
    const down = step(stacked, 'a', 0, 1);
    expect(byId(down)).toEqual({ a: [0, 3, 6, 3], b: [0, 0, 6, 3] });
    expect(byId(step(down, 'a', 0, -1))).toEqual(byId(stacked));
    // At the bottom, the left edge and the minimum size nothing changes.
    expect(step(down, 'a', 0, 1)).toBe(down);
    expect(step(stacked, 'a', -1, 0)).toBe(stacked);
    const small: Box[] = [{ id: 'a', x: 0, y: 0, w: 2, h: 2 }];
    expect(step(small, 'a', -1, 0, true)).toBe(small);
    expect(byId(step(small, 'a', 1, 0, true))).toEqual({ a: [0, 0, 3, 2] });
    expect(byId(step(stacked, 'b', 1, 0))).toEqual({ a: [0, 0, 6, 3], b: [1, 3, 6, 3] });
  });
});
