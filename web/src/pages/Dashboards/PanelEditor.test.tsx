import { afterEach, describe, expect, it, vi } from 'vitest';
import { flush, mount, stubFetch, submit, typeInto, unmountAll } from '../../testing';
import { CHARTS_FOR, type PanelDraft } from './model';
import { PanelEditor } from './PanelEditor';

afterEach(() => {
  unmountAll();
  vi.unstubAllGlobals();
});

const initial: PanelDraft = { title: 'Events', query: '', chart: 'timeseries', metric: 'histogram', field: '', size: 1, stat: 'avg' };

describe('panel editor', () => {
  it('offers the charts of the chosen metric, suggests fields, and saves the draft', async () => {
    stubFetch(() => [200, { fields: [{ name: '@host', type: 'keyword', count: 3 }, { name: 'status', type: 'number', count: 3 }] }]);
    const onSave = vi.fn();
    const root = mount(<PanelEditor initial={initial} onSave={onSave} onCancel={() => {}} />);
    await flush();
    typeInto(root.querySelector('select[name="metric"]'), 'terms');
    const charts = [...root.querySelectorAll<HTMLInputElement>('input[name="chart"]')].map((r) => r.value);
    expect(charts).toEqual(CHARTS_FOR.terms);
    expect(root.querySelector<HTMLInputElement>('input[name="chart"]:checked')?.value).toBe(CHARTS_FOR.terms[0]);
    expect([...root.querySelectorAll('#panel-fields option')].map((o) => o.getAttribute('value'))).toEqual(['@host', 'status']);
    typeInto(root.querySelector('input[name="field"]'), '@host');
    typeInto(root.querySelector('input[name="query"]'), 'level:error');
    submit(root.querySelector('form'));
    expect(onSave).toHaveBeenCalledWith({ ...initial, metric: 'terms', chart: CHARTS_FOR.terms[0], field: '@host', size: 10, query: 'level:error' });
  });
});
