import { describe, expect, it } from 'vitest';
import type { Panel } from '../../api/dashboards';
import { board } from './fixtures';
import { EXPORT_FORMAT, duplicatePanel, exportJson, exportName, parseImport } from './transfer';

const panel: Panel = { id: 'p1', title: 'Errors', chart: 'timeseries', query: 'level:error', aggs: { a: { type: 'date_histogram', buckets: 60 } }, options: { metric: 'histogram' }, layout: { x: 0, y: 0, w: 6, h: 3 } };

describe('dashboard export, import and duplicate (issue 22, missing 8)', () => {
  it('exports what describes the board, not who owns it, and imports it back as a private board with new panel ids', () => {
    const text = exportJson({ ...board, refresh: '30s', panels: [panel] });
    const v = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(v)).toEqual(['format', 'title', 'description', 'time', 'refresh', 'panels']);
    expect(v['format']).toBe(EXPORT_FORMAT);
    const body = parseImport(text);
    expect(body).toMatchObject({ title: 'Web errors', description: '', sharing: { everyone: false, groups: [] }, time: { from: 'now-1h', to: null }, refresh: '30s' });
    expect(body.panels).toHaveLength(1);
    const { id, ...rest } = body.panels[0] as Panel;
    expect(id).not.toBe('p1');
    expect(rest).toEqual({ title: 'Errors', chart: 'timeseries', query: 'level:error', aggs: panel.aggs, options: { metric: 'histogram' }, layout: panel.layout });
    expect(exportName('Web errors / prod')).toBe('web-errors-prod.json');
  });

  it('says what is wrong with a bad file', () => {
    expect(() => parseImport('{')).toThrow(/^not JSON: /);
    expect(() => parseImport('[]')).toThrow('not a dashboard: expected a JSON object');
    expect(() => parseImport('{"title":""}')).toThrow('"title" must be a non-empty string');
    expect(() => parseImport('{"title":"x","format":"grafana"}')).toThrow('unknown format "grafana"');
    expect(() => parseImport('{"title":"x","panels":[{"title":"a"}]}')).toThrow('panel 1: expected an object with "title", "chart" and "layout"');
  });

  it('duplicates a panel beside the others with its size', () => {
    const next = duplicatePanel([panel], panel);
    expect(next).toHaveLength(2);
    expect(next[1]).toMatchObject({ title: 'Errors (copy)', query: 'level:error', layout: { x: 6, y: 0, w: 6, h: 3 } });
    expect(next[1]?.id).not.toBe('p1');
  });
});
