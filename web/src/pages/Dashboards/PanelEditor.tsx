// The panel editor dialog: edits a draft of one panel (metric first, then
// the charts that metric can draw, the field from the fields in store; a
// histogram can split by a field: one series per top value).
import { useState } from 'preact/hooks';
import type { Metric, Stat } from '../../api/dashboards';
import { useFields } from '../../hooks/useFields';
import { CHARTS_FOR, MAX_SPLIT, METRIC_LABEL, type PanelDraft } from './model';

export function PanelEditor({ initial, onSave, onCancel }: { initial: PanelDraft; onSave: (d: PanelDraft) => void; onCancel: () => void }) {
  const [d, setD] = useState(initial);
  const fields = useFields(null);
  const set = (patch: Partial<PanelDraft>): void => {
    const next = { ...d, ...patch };
    if (patch.metric === 'terms' && d.metric !== 'terms') next.size = 10;
    if (patch.metric === 'events' && d.metric !== 'events') next.size = 50;
    if (!CHARTS_FOR[next.metric].includes(next.chart)) next.chart = CHARTS_FOR[next.metric][0] ?? 'table';
    setD(next);
  };
  const needsField = d.metric === 'terms' || d.metric === 'stats';
  return (
    <div class="modal-backdrop" role="dialog" aria-modal="true" aria-label="Panel">
      <form
        class="modal panel-editor"
        onSubmit={(e) => {
          e.preventDefault();
          onSave(d);
        }}
        onKeyDown={(e) => e.key === 'Escape' && onCancel()}
      >
        <h2>Panel</h2>
        <label>
          Title
          <input name="title" value={d.title} onInput={(e) => set({ title: e.currentTarget.value })} required autoFocus />
        </label>
        <label>
          Query
          <input name="query" value={d.query} placeholder="everything" onInput={(e) => set({ query: e.currentTarget.value })} />
        </label>
        <label>
          Shows
          <select name="metric" value={d.metric} onChange={(e) => set({ metric: e.currentTarget.value as Metric })}>
            {(Object.keys(METRIC_LABEL) as Metric[]).map((m) => (
              <option key={m} value={m}>
                {METRIC_LABEL[m]}
              </option>
            ))}
          </select>
        </label>
        {needsField || d.metric === 'events' ? (
          <label>
            {d.metric === 'events' ? 'Columns (comma-separated)' : 'Field'}
            <input name="field" list="panel-fields" value={d.field} required={needsField} onInput={(e) => set({ field: e.currentTarget.value })} />
          </label>
        ) : null}
        {d.metric === 'histogram' ? (
          <>
            <label>
              Split by field (one series per top value; empty for one series)
              <input name="split" list="panel-fields" value={d.split ?? ''} onInput={(e) => set({ split: e.currentTarget.value.trim() })} />
            </label>
            {d.split ? (
              <label>
                Series
                <input name="size" type="number" min={1} max={MAX_SPLIT} value={Math.min(d.size, MAX_SPLIT)} onInput={(e) => set({ size: Number(e.currentTarget.value) })} />
              </label>
            ) : null}
          </>
        ) : null}
        <datalist id="panel-fields">
          {(fields.data ?? []).map((f) => (
            <option key={f.name} value={f.name} />
          ))}
        </datalist>
        {d.metric === 'terms' || d.metric === 'events' ? (
          <label>
            {d.metric === 'terms' ? 'Values' : 'Events'}
            <input name="size" type="number" min={1} max={1000} value={d.size} onInput={(e) => set({ size: Number(e.currentTarget.value) })} />
          </label>
        ) : null}
        {d.metric === 'stats' ? (
          <label>
            Statistic
            <select name="stat" value={d.stat} onChange={(e) => set({ stat: e.currentTarget.value as Stat })}>
              {(['avg', 'min', 'max', 'sum', 'count'] as Stat[]).map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          </label>
        ) : null}
        <fieldset class="chart-choice">
          <legend>Chart</legend>
          {CHARTS_FOR[d.metric].map((c) => (
            <label key={c} class="inline">
              <input type="radio" name="chart" value={c} checked={d.chart === c} onChange={() => set({ chart: c })} /> {c}
            </label>
          ))}
        </fieldset>
        <div class="buttons">
          <button type="submit" class="primary">
            Apply
          </button>
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
