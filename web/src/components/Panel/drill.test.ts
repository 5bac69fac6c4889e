import { describe, expect, it } from 'vitest';
import type { Panel } from '../../api/dashboards';
import { bucketDrill, seriesDrill, termDrill } from './drill';
import { levelsPanel } from './fixtures';

const terms: Panel = { ...levelsPanel, title: 'Status', chart: 'bar', query: 'app:web OR app:api', aggs: { a: { type: 'terms', field: 'status', size: 5 } } };
const range = { from: 'now-1h', to: 'now' };
const params = (url: string | null) => Object.fromEntries(new URL(url ?? '/', 'http://x').searchParams);

describe('drill-down', () => {
  it('goes from a terms bucket to Search with the panel query and the value, over the dashboard range', () => {
    expect(params(termDrill(terms, 500, range))).toEqual({ q: '(app:web OR app:api) AND status:"500"', from: 'now-1h' });
    expect(params(termDrill({ ...terms, query: '' }, 'a"b', range))).toEqual({ q: 'status:"a\\"b"', from: 'now-1h' });
    expect(termDrill(terms, null, range)).toBeNull();
    expect(termDrill({ ...terms, aggs: { a: { type: 'date_histogram' } } }, 'x', range)).toBeNull();
  });

  it('goes from a time bucket to Search over that bucket, with a split value', () => {
    const start = Date.UTC(2024, 0, 1, 10, 0);
    expect(params(bucketDrill(terms, start, 60_000))).toEqual({
      q: 'app:web OR app:api',
      from: '2024-01-01T10:00:00.000Z',
      to: '2024-01-01T10:01:00.000Z',
    });
    expect(params(bucketDrill({ ...terms, query: '' }, start, 60_000, { field: 'status', value: '200' }))['q']).toBe('status:"200"');
    expect(params(seriesDrill({ ...terms, query: '' }, 'status', '404', range))).toEqual({ q: 'status:"404"', from: 'now-1h' });
  });
});
