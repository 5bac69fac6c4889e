import { render } from 'preact';
import { describe, expect, it } from 'vitest';
import type { Panel } from '../../api/dashboards';
import { levelsPanel } from './fixtures';
import { panelRequest, type PanelData } from '../../hooks/usePanelData';
import { PanelBody, panelNumber, panelRows } from './Panel';

const base: Panel = levelsPanel;
const terms: PanelData = {
  kind: 'aggregate',
  result: { total: 12, took_ms: 1, aggs: { a: { type: 'terms', buckets: [{ key: 'error', count: 7 }, { key: 'warn', count: 4 }], other: 1 } } },
};
const hits: PanelData = {
  kind: 'search',
  result: {
    total: 2,
    took_ms: 1,
    next: null,
    hits: [
      { id: '2', event: { '@timestamp': '2024-01-01T00:00:02Z', message: 'b', host: 'h2' } },
      { id: '1', event: { '@timestamp': '2024-01-01T00:00:01Z', message: 'a', host: 'h1' } },
    ],
  },
};

describe('Panel', () => {
  it('sends an aggregation with aggs and a search without', () => {
    const range = { from: 'now-1h', to: 'now' };
    expect(panelRequest(base, range)).toEqual({ kind: 'aggregate', req: { query: 'svc:api', from: 'now-1h', to: 'now', aggs: base.aggs } });
    const { aggs: _a, ...noAggs } = base;
    expect(panelRequest({ ...noAggs, fields: ['host'], size: 10 }, range)).toEqual({
      kind: 'search',
      req: { query: 'svc:api', from: 'now-1h', to: 'now', size: 10, fields: ['host'] },
    });
  });

  it('computes numbers and table rows', () => {
    expect(panelNumber({ ...base, chart: 'number' }, hits)).toBe(2);
    const stats: PanelData = { kind: 'aggregate', result: { total: 3, took_ms: 0, aggs: { s: { type: 'stats', count: 3, min: 1, max: 5, avg: 3, sum: 9 } } } };
    expect(panelNumber({ ...base, options: { stat: 'sum' } }, stats)).toBe(9);
    expect(panelRows(terms)).toEqual([
      ['error', 7],
      ['warn', 4],
      ['(other)', 1],
    ]);
  });

  it('renders table, events, number and pie panels', () => {
    const el = document.createElement('div');
    render(<PanelBody panel={base} data={terms} />, el);
    expect([...el.querySelectorAll('tr')].map((r) => r.textContent)).toEqual(['error7', 'warn4', '(other)1']);
    render(<PanelBody panel={{ ...base, fields: ['host', 'message'] }} data={hits} />, el);
    expect([...el.querySelectorAll('tbody tr')].map((r) => [...r.querySelectorAll('td')].slice(1).map((t) => t.textContent))).toEqual([
      ['h2', 'b'],
      ['h1', 'a'],
    ]);
    render(<PanelBody panel={{ ...base, chart: 'number' }} data={hits} />, el);
    expect(el.querySelector('.big-number')?.textContent).toBe('2');
    render(<PanelBody panel={{ ...base, chart: 'pie' }} data={terms} />, el);
    expect(el.querySelectorAll('path')).toHaveLength(2);
  });

  it('drills down from a terms row and a pie slice to Search with the value (issue 22, missing 8)', () => {
    const el = document.createElement('div');
    const urls: string[] = [];
    const range = { from: 'now-1h', to: 'now' };
    render(<PanelBody panel={base} data={terms} range={range} onDrill={(u) => urls.push(u)} />, el);
    // (other) is no single value: no drill-down there.
    expect([...el.querySelectorAll('th button.drill')].map((b) => b.textContent)).toEqual(['error', 'warn']);
    (el.querySelector('th button.drill') as HTMLButtonElement).click();
    render(<PanelBody panel={{ ...base, chart: 'pie' }} data={terms} range={range} onDrill={(u) => urls.push(u)} />, el);
    (el.querySelectorAll('.legend button.drill')[1] as HTMLButtonElement).click();
    el.querySelectorAll('path')[0]?.dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(urls).toEqual([
      '/search?q=svc%3Aapi+AND+level%3A%22error%22&from=now-1h',
      '/search?q=svc%3Aapi+AND+level%3A%22warn%22&from=now-1h',
      '/search?q=svc%3Aapi+AND+level%3A%22error%22&from=now-1h',
    ]);
    // Without a range and a handler (previews), rows are plain text.
    render(<PanelBody panel={base} data={terms} />, el);
    expect(el.querySelector('button.drill')).toBeNull();
  });
});
