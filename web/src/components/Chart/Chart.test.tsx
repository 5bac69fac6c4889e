import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';

// uPlot draws on a canvas, which the test DOM does not have: record what the
// wrapper asks of it instead.
const calls: string[] = [];
const lastPlots: { over: HTMLElement }[] = [];
vi.mock('uplot', () => {
  class FakePlot {
    width: number;
    over = document.createElement('div');
    static paths = { bars: () => () => null };
    // Ten pixels per point.
    posToIdx(x: number): number {
      return Math.floor(x / 10);
    }
    constructor(opts: { width: number; height: number }, data: number[][], el: HTMLElement) {
      this.width = opts.width;
      lastPlots.push(this);
      calls.push(`new ${opts.width}x${opts.height} ${JSON.stringify(data)} in ${el.className}`);
    }
    setData(d: number[][]): void {
      calls.push(`setData ${JSON.stringify(d)}`);
    }
    setSize(s: { width: number }): void {
      calls.push(`setSize ${s.width}`);
    }
    destroy(): void {
      calls.push('destroy');
    }
  }
  return { default: FakePlot };
});

const { Chart, barSeries, colour, isEmpty } = await import('./Chart');
const { Sparkline } = await import('../Sparkline/Sparkline');

/** A click `x` pixels into the plot. */
function clickAt(x: number): MouseEvent {
  const e = new MouseEvent('click');
  Object.defineProperty(e, 'offsetX', { value: x });
  return e;
}

describe('Chart', () => {
  it('creates the plot once, feeds new data, rebuilds on new options, destroys on unmount', () => {
    calls.length = 0;
    const el = document.createElement('div');
    const opts = (w: number, h: number) => ({ width: w, height: h, series: [] });
    act(() => render(<Chart options={opts} optionsKey="a" data={[[1], [2]]} height={80} label="x" />, el));
    act(() => render(<Chart options={opts} optionsKey="a" data={[[1, 2], [2, 3]]} height={80} label="x" />, el));
    act(() => render(<Chart options={opts} optionsKey="b" data={[[1, 2], [2, 3]]} height={80} label="x" />, el));
    act(() => render(null, el));
    expect(calls).toEqual([
      'new 100x80 [[1],[2]] in chart',
      'setData [[1],[2]]',
      'setData [[1,2],[2,3]]',
      'destroy',
      'new 100x80 [[1,2],[2,3]] in chart',
      'setData [[1,2],[2,3]]',
      'destroy',
    ]);
  });

  it('labels the chart for screen readers and builds bar series', () => {
    const el = document.createElement('div');
    act(() => render(<Sparkline times={[1, 2]} values={[3, 4]} label="rate" />, el));
    expect(el.querySelector('[role=img]')?.getAttribute('aria-label')).toBe('rate');
    const s = barSeries('hits', 1, [0.9, 64]);
    expect(s.stroke).toBe(colour(1));
    expect(typeof s.paths).toBe('function');
    act(() => render(null, el));
  });
});

describe('Pick', () => {
  it('reports the point under a click on the plot, not past the data (drill-down, issue 22)', () => {
    const el = document.createElement('div');
    const picked: number[] = [];
    const opts = (w: number, h: number) => ({ width: w, height: h, series: [] });
    lastPlots.length = 0;
    act(() => render(<Chart options={opts} optionsKey="p" data={[[1, 2, 3], [4, 5, 6]]} height={50} label="l" onPick={(i) => picked.push(i)} />, el));
    const over = el.querySelector('.chart-box.pickable');
    expect(over).not.toBeNull();
    const click = (x: number) => lastPlots[0]?.over.dispatchEvent(clickAt(x));
    click(15);
    click(95);
    expect(picked).toEqual([1]);
    act(() => render(null, el));
  });
});

describe('No data', () => {
  it('is said over a chart whose values are all 0 or missing, when asked', () => {
    expect(isEmpty([[1, 2], [0, null]])).toBe(true);
    expect(isEmpty([[], []])).toBe(true);
    expect(isEmpty([[1, 2], [0, 3]])).toBe(false);
    const el = document.createElement('div');
    act(() => render(<Chart options={(w, h) => ({ width: w, height: h, series: [] })} optionsKey="k" data={[[1], [0]]} height={50} label="l" noData />, el));
    expect(el.querySelector('.no-data')?.textContent).toBe('No data');
    act(() => render(<Chart options={(w, h) => ({ width: w, height: h, series: [] })} optionsKey="k" data={[[1], [2]]} height={50} label="l" noData />, el));
    expect(el.querySelector('.no-data')).toBeNull();
    act(() => render(<Chart options={(w, h) => ({ width: w, height: h, series: [] })} optionsKey="k" data={[[1], [0]]} height={50} label="l" />, el));
    expect(el.querySelector('.no-data')).toBeNull();
  });
});
