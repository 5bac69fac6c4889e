import { describe, expect, it } from 'vitest';
import { CHARTS_FOR, draftOf, fieldDashboard, panelFromDraft, type PanelDraft } from './model';

const base = { id: 'p1', layout: { x: 0, y: 0, w: 6, h: 3 } };
const draft: PanelDraft = { title: 'Top hosts', query: 'level:error', chart: 'pie', metric: 'terms', field: '@host', size: 5, stat: 'avg' };

describe('panel editor model', () => {
  it('turns drafts into panels of the dashboard API and back', () => {
    const p = panelFromDraft(draft, base);
    expect(p).toEqual({
      id: 'p1',
      layout: base.layout,
      title: 'Top hosts',
      query: 'level:error',
      chart: 'pie',
      options: { metric: 'terms' },
      aggs: { a: { type: 'terms', field: '@host', size: 5 } },
    });
    expect(draftOf(p)).toEqual(draft);
    const count = panelFromDraft({ ...draft, metric: 'count', chart: 'number' }, base);
    expect(count.aggs).toBeUndefined();
    expect(count.size).toBe(1);
    const events = panelFromDraft({ ...draft, metric: 'events', chart: 'table', field: '@host, message', size: 20 }, base);
    expect(events.fields).toEqual(['@host', 'message']);
    expect(events.size).toBe(20);
    const stats = panelFromDraft({ ...draft, metric: 'stats', chart: 'number', field: 'ms', stat: 'max' }, base);
    expect(stats.aggs).toEqual({ a: { type: 'stats', field: 'ms' } });
    expect(draftOf(stats).stat).toBe('max');
  });

  it('keeps a histogram split by a field with at most 10 series (issue 22, missing 8)', () => {
    const split = panelFromDraft({ ...draft, metric: 'histogram', chart: 'timeseries', field: '', split: 'status', size: 50 }, base);
    expect(split.options).toEqual({ metric: 'histogram', split: { field: 'status', size: 10 } });
    expect(split.aggs).toEqual({ a: { type: 'date_histogram', buckets: 60 } });
    expect(draftOf(split)).toMatchObject({ metric: 'histogram', split: 'status', size: 10 });
    const plain = panelFromDraft({ ...draft, metric: 'histogram', chart: 'timeseries', split: '' }, base);
    expect(plain.options).toEqual({ metric: 'histogram' });
  });

  it('offers every chart type for some metric', () => {
    const all = new Set(Object.values(CHARTS_FOR).flat());
    expect([...all].sort()).toEqual(['bar', 'number', 'pie', 'table', 'timeseries']);
  });
});

describe('visualize a field (issue 22, missing 7)', () => {
  it('makes a private dashboard with a bar panel of the top values in the search and its range', () => {
    const d = fieldDashboard('service', 'level:error', { from: 'now-7d', to: 'now' });
    expect({ ...d, panels: d.panels.map(({ id: _id, ...p }) => p) }).toEqual({
      title: 'service: top values',
      description: 'From the search level:error',
      sharing: { everyone: false, groups: [] },
      time: { from: 'now-7d', to: null },
      refresh: null,
      panels: [{ title: 'Top service', query: 'level:error', chart: 'bar', options: { metric: 'terms' }, aggs: { a: { type: 'terms', field: 'service', size: 10 } }, layout: { x: 0, y: 0, w: 6, h: 3 } }],
    });
  });
});
