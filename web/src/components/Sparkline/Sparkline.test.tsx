import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';

let lastOpts: { scales?: { y?: { range?: (u: unknown, min: number, max: number) => [number, number] } }; series: { stroke?: string }[] } | null = null;
vi.mock('uplot', () => ({
  default: class {
    width = 100;
    over = document.createElement('div');
    constructor(opts: typeof lastOpts) {
      lastOpts = opts;
    }
    setData(): void {}
    destroy(): void {}
  },
}));

const { Sparkline } = await import('./Sparkline');
const { colour } = await import('../Chart/Chart');

describe('Sparkline', () => {
  it('starts the y axis at zero with headroom and uses its colour', () => {
    const el = document.createElement('div');
    act(() => render(<Sparkline times={[1, 2]} values={[0, 100]} label="queue" colourIndex={3} />, el));
    const [lo, hi] = lastOpts?.scales?.y?.range?.(null, 0, 100) ?? [NaN, NaN];
    expect(lo).toBe(0);
    expect(hi).toBeCloseTo(110, 9);
    expect(lastOpts?.scales?.y?.range?.(null, 0, 0)).toEqual([0, 1]);
    expect(lastOpts?.series[1]?.stroke).toBe(colour(3));
    act(() => render(null, el));
  });
});
