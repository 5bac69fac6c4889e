import { render } from 'preact';
import { act } from 'preact/test-utils';
import { describe, expect, it, vi } from 'vitest';
import type { Panel } from '../../api/dashboards';
import { levelsPanel } from './fixtures';
import type { PanelData } from '../../hooks/usePanelData';

// uPlot draws on a canvas, which the test DOM does not have: a stand-in
// that keeps the series it was given and picks 100 px per point.
const plots: { series: { label?: string }[]; over: HTMLElement }[] = [];
vi.mock('uplot', () => {
  class FakePlot {
    width: number;
    series: { label?: string }[];
    over = document.createElement('div');
    static paths = { bars: () => () => null };
    constructor(opts: { width: number; series: { label?: string }[] }) {
      this.width = opts.width;
      this.series = opts.series;
      plots.push(this);
    }
    posToIdx(x: number): number {
      return Math.floor(x / 100);
    }
    setData(): void {}
    setSize(): void {}
    destroy(): void {}
  }
  return { default: FakePlot };
});

const { PanelBody, alignSeries } = await import('./Panel');
const { seriesRequest, splitRequest } = await import('../../hooks/usePanelData');

const base: Panel = levelsPanel;

/** A click `x` pixels into the plot. */
function clickAt(x: number): MouseEvent {
  const e = new MouseEvent('click');
  Object.defineProperty(e, 'offsetX', { value: x });
  return e;
}

describe('split-by histogram and time drill-down (issue 22, missing 8)', () => {
  it('splits a histogram by a field: requests, aligned series and a legend that drills down', () => {
    const range = { from: 'now-1h', to: 'now' };
    const hist: Panel = { ...base, chart: 'timeseries', aggs: { a: { type: 'date_histogram', buckets: 60 } }, options: { metric: 'histogram', split: { field: 'status', size: 3 } } };
    expect(splitRequest(hist, range, { field: 'status', size: 3 })).toEqual({
      query: 'svc:api',
      from: 'now-1h',
      to: 'now',
      aggs: { a: { type: 'date_histogram', buckets: 60 }, values: { type: 'terms', field: 'status', size: 3 } },
    });
    expect(seriesRequest(hist, range, 'status', '500').query).toBe('svc:api AND status:"500"');
    const series = [
      { value: '200', buckets: [{ key: 0, count: 5 }, { key: 60_000, count: 1 }] },
      { value: '500', buckets: [{ key: 60_000, count: 2 }] },
    ];
    expect(alignSeries([0, 60_000], series)).toEqual([
      [5, 1],
      [null, 2],
    ]);
    const data: PanelData = {
      kind: 'aggregate',
      result: { total: 8, took_ms: 1, aggs: { a: { type: 'date_histogram', interval_ms: 60_000, buckets: [{ key: 0, count: 5 }, { key: 60_000, count: 3 }] } } },
      split: series,
    };
    const el = document.createElement('div');
    const urls: string[] = [];
    act(() => render(<PanelBody panel={hist} data={data} range={range} onDrill={(u) => urls.push(u)} />, el));
    expect([...el.querySelectorAll('.split-legend li')].map((li) => li.textContent?.trim())).toEqual(['200', '500']);
    expect(el.querySelector('.chart')?.getAttribute('aria-label')).toBe('2 series: 200, 500');
    (el.querySelectorAll('.split-legend button.drill')[1] as HTMLButtonElement).click();
    expect(urls).toEqual(['/search?q=svc%3Aapi+AND+status%3A%22500%22&from=now-1h']);
  });

  it('drills down from a time bucket to Search over that bucket', () => {
    const range = { from: 'now-1h', to: 'now' };
    const hist: Panel = { ...base, chart: 'bar', aggs: { a: { type: 'date_histogram', buckets: 60 } }, options: { metric: 'histogram' } };
    const t0 = Date.UTC(2024, 0, 1);
    const data: PanelData = {
      kind: 'aggregate',
      result: { total: 8, took_ms: 1, aggs: { a: { type: 'date_histogram', interval_ms: 60_000, buckets: [{ key: t0, count: 5 }, { key: t0 + 60_000, count: 3 }] } } },
    };
    const el = document.createElement('div');
    const urls: string[] = [];
    plots.length = 0;
    act(() => render(<PanelBody panel={hist} data={data} range={range} onDrill={(u) => urls.push(u)} />, el));
    plots[0]?.over.dispatchEvent(clickAt(150));
    expect(urls).toEqual(['/search?q=svc%3Aapi&from=2024-01-01T00%3A01%3A00.000Z&to=2024-01-01T00%3A02%3A00.000Z']);
    act(() => render(null, el));
  });
});
