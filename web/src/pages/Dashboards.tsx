// Dashboards: the list (own and shared), and one dashboard — view with one
// time range and auto-refresh, or edit: add/edit/remove panels, drag and
// resize them on the grid, share, save.
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../api/client';
import type { Aggregation } from '../api/types';
import {
  createDashboard,
  deleteDashboard,
  getDashboard,
  listDashboards,
  newPanelId,
  refreshSeconds,
  saveDashboard,
  storedLocally,
  GRID_COLUMNS,
  type ChartType,
  type Dashboard,
  type Metric,
  type Panel,
  type Stat,
} from '../api/dashboards';
import { DashboardGrid } from '../components/DashboardGrid/DashboardGrid';
import { bottomOf } from '../components/DashboardGrid/layout';
import { ErrorBox } from '../components/ErrorBox/ErrorBox';
import { Link } from '../components/Nav/Nav';
import { PanelView } from '../components/Panel/Panel';
import { TimePicker } from '../components/TimePicker/TimePicker';
import { useFields } from '../hooks/useFields';
import { toApiError, useRequest } from '../hooks/useRequest';
import { navigate, useLeaveGuard } from '../lib/router';
import type { TimeRange } from '../lib/time';

/** What the panel editor edits. */
export interface PanelDraft {
  title: string;
  query: string;
  chart: ChartType;
  metric: Metric;
  field: string;
  size: number;
  stat: Stat;
}

/** The panel a draft describes (keeps `id` and `layout` of `base`). */
export function panelFromDraft(d: PanelDraft, base: Pick<Panel, 'id' | 'layout'>): Panel {
  const p: Panel = { id: base.id, layout: base.layout, title: d.title || 'Untitled', query: d.query, chart: d.chart, options: { metric: d.metric } };
  let agg: Aggregation | null = null;
  switch (d.metric) {
    case 'count':
      p.size = 1;
      break;
    case 'events':
      p.size = Math.min(1000, Math.max(1, d.size));
      if (d.field) p.fields = d.field.split(',').map((f) => f.trim()).filter(Boolean);
      break;
    case 'histogram':
      agg = { type: 'date_histogram', buckets: 60 };
      break;
    case 'terms':
      agg = { type: 'terms', field: d.field, size: Math.max(1, d.size) };
      break;
    case 'stats':
      agg = { type: 'stats', field: d.field };
      p.options.stat = d.stat;
      break;
  }
  if (agg) p.aggs = { a: agg };
  return p;
}

/** The draft of an existing panel. */
export function draftOf(p: Panel): PanelDraft {
  const a = p.aggs ? Object.values(p.aggs)[0] : undefined;
  const metric: Metric =
    p.options.metric ?? (a?.type === 'date_histogram' ? 'histogram' : a?.type === 'terms' ? 'terms' : a?.type === 'stats' ? 'stats' : p.size === 1 ? 'count' : 'events');
  return {
    title: p.title,
    query: p.query,
    chart: p.chart,
    metric,
    field: a && 'field' in a ? a.field : (p.fields ?? []).join(','),
    size: a?.type === 'terms' ? (a.size ?? 10) : (p.size ?? 50),
    stat: p.options.stat ?? 'avg',
  };
}

/** Charts that can draw a metric. */
export const CHARTS_FOR: Record<Metric, ChartType[]> = {
  count: ['number'],
  histogram: ['timeseries', 'bar', 'table'],
  terms: ['bar', 'pie', 'table', 'number'],
  stats: ['number', 'table'],
  events: ['table', 'number'],
};

const METRIC_LABEL: Record<Metric, string> = {
  count: 'Count of events',
  histogram: 'Events over time',
  terms: 'Top values of a field',
  stats: 'Statistic of a numeric field',
  events: 'Latest events',
};

function PanelEditor({ initial, onSave, onCancel }: { initial: PanelDraft; onSave: (d: PanelDraft) => void; onCancel: () => void }) {
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

/** The list of dashboards. */
export function DashboardListPage() {
  const [tick, setTick] = useState(0);
  const list = useRequest(`list#${tick}`, (signal) => listDashboards(signal));
  const [title, setTitle] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  return (
    <main id="main" class="dashboards-page" tabIndex={-1}>
      <h1>Dashboards</h1>
      {storedLocally() ? <p class="note">This node does not store dashboards; they are kept in this browser only.</p> : null}
      <ErrorBox error={list.error ?? error} />
      <ul class="dashboard-list">
        {(list.data ?? []).map((d) => (
          <li key={d.id}>
            <Link href={`/dashboards/${d.id}`}>{d.title}</Link> <span class="muted">by {d.owner}</span>
            {d.sharing.everyone ? <span class="badge">shared</span> : d.sharing.groups.length > 0 ? <span class="badge">{d.sharing.groups.join(', ')}</span> : null}
            {d.can_edit ? (
              <button
                type="button"
                class="link danger"
                aria-label={`Delete ${d.title}`}
                onClick={() => {
                  if (!confirm(`Delete the dashboard "${d.title}"?`)) return;
                  deleteDashboard(d.id).then(() => setTick((t) => t + 1), (e: unknown) => setError(toApiError(e)));
                }}
              >
                delete
              </button>
            ) : null}
          </li>
        ))}
        {list.data && list.data.length === 0 ? <li class="muted">No dashboards yet.</li> : null}
      </ul>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          createDashboard({ title: title || 'New dashboard', description: '', sharing: { everyone: false, groups: [] }, time: { from: 'now-1h', to: null }, refresh: null, panels: [] }).then(
            (d) => navigate(`/dashboards/${d.id}?edit=1`),
            (err: unknown) => setError(toApiError(err)),
          );
        }}
      >
        <label>
          New dashboard
          <input name="title" value={title} placeholder="Title" onInput={(e) => setTitle(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary">
          Create
        </button>
      </form>
    </main>
  );
}

const REFRESH = [null, '10s', '30s', '1m', '5m'] as const;

/** One dashboard. */
export function DashboardPage({ id, edit }: { id: number; edit: boolean }) {
  const [d, setD] = useState<Dashboard | null>(null);
  const [dirty, setDirty] = useState(false);
  const [editing, setEditing] = useState(edit);
  const [error, setError] = useState<ApiError | null>(null);
  const [saving, setSaving] = useState(false);
  const [panelEdit, setPanelEdit] = useState<{ panel: Panel; isNew: boolean } | null>(null);
  const [refresh, setRefresh] = useState(0);

  useEffect(() => {
    const c = new AbortController();
    getDashboard(id, c.signal).then(
      (x) => {
        setD(x);
        setDirty(false);
      },
      (e: unknown) => !c.signal.aborted && setError(toApiError(e)),
    );
    return () => c.abort();
  }, [id]);

  // Only changes the user can save are "unsaved": a viewer may try another
  // range or refresh period on a read-only dashboard without being told so.
  const unsaved = dirty && d?.can_edit === true;
  useLeaveGuard(unsaved ? 'This dashboard has unsaved changes. Leave without saving?' : null);

  const period = refreshSeconds(d?.refresh ?? null);
  useEffect(() => {
    if (!period || editing) return undefined;
    const t = setInterval(() => setRefresh((r) => r + 1), period * 1000);
    return () => clearInterval(t);
  }, [period, editing]);

  if (!d) return <main id="main">{error ? <ErrorBox error={error} /> : <p class="muted">Loading…</p>}</main>;

  const range: TimeRange = { from: d.time.from, to: d.time.to ?? 'now' };
  const change = (patch: Partial<Dashboard>): void => {
    setD({ ...d, ...patch });
    setDirty(true);
  };
  const save = (): void => {
    setSaving(true);
    const { title, description, sharing, time, refresh: r, panels, version } = d;
    saveDashboard(d.id, { title, description, sharing, time, refresh: r, panels, version }).then(
      (x) => {
        setD(x);
        setDirty(false);
        setSaving(false);
        setError(null);
        setEditing(false);
        // Drop `?edit=1` (a new dashboard opens with it): a reload shows the saved view.
        navigate(`/dashboards/${x.id}`, true);
      },
      (e: unknown) => {
        setError(toApiError(e));
        setSaving(false);
      },
    );
  };
  const addPanel = (): void =>
    setPanelEdit({
      isNew: true,
      panel: { id: newPanelId(), title: '', query: '', chart: 'timeseries', options: { metric: 'histogram' }, layout: { x: 0, y: bottomOf(d.panels.map((p) => ({ id: p.id, ...p.layout }))), w: GRID_COLUMNS / 2, h: 3 } },
    });

  return (
    <main id="main" class="dashboard-page" tabIndex={-1}>
      <div class="toolbar">
        {editing ? (
          <input class="title-input" aria-label="Dashboard title" value={d.title} onInput={(e) => change({ title: e.currentTarget.value })} />
        ) : (
          <h1>{d.title}</h1>
        )}
        <TimePicker value={range} onChange={(r) => change({ time: { from: r.from, to: r.to === 'now' ? null : r.to } })} />
        <label class="inline">
          Refresh
          <select aria-label="Auto-refresh" value={d.refresh ?? ''} onChange={(e) => change({ refresh: e.currentTarget.value || null })}>
            {REFRESH.map((r) => (
              <option key={r ?? 'off'} value={r ?? ''}>
                {r ?? 'off'}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setRefresh((r) => r + 1)} title="Refresh now">
          ⟳
        </button>
        <span class="spacer" />
        {d.can_edit ? (
          editing ? (
            <>
              <button type="button" onClick={addPanel}>
                + Add panel
              </button>
              <label class="inline">
                <input type="checkbox" checked={d.sharing.everyone} onChange={(e) => change({ sharing: { ...d.sharing, everyone: e.currentTarget.checked } })} /> Share with everyone
              </label>
              <input
                aria-label="Share with groups (comma-separated)"
                placeholder="share with groups…"
                value={d.sharing.groups.join(',')}
                onChange={(e) => change({ sharing: { ...d.sharing, groups: e.currentTarget.value.split(',').map((g) => g.trim()).filter(Boolean) } })}
              />
              <button type="button" class="primary" onClick={save} disabled={saving}>
                {saving ? 'Saving…' : 'Save'}
              </button>
            </>
          ) : (
            <>
              {dirty ? (
                <button type="button" class="primary" onClick={save} disabled={saving}>
                  Save
                </button>
              ) : null}
              <button type="button" onClick={() => setEditing(true)}>
                Edit
              </button>
            </>
          )
        ) : (
          <span class="muted">read-only (owned by {d.owner})</span>
        )}
      </div>
      {unsaved ? <p class="note" role="status">Unsaved changes.</p> : null}
      <ErrorBox error={error} />
      {d.panels.length === 0 ? <p class="empty">No panels yet{d.can_edit ? ': add one.' : '.'}</p> : null}
      <DashboardGrid
        panels={d.panels}
        editing={editing}
        onChange={(panels) => change({ panels })}
        render={(p) => <PanelView panel={p} range={range} refresh={refresh} />}
        actions={(p) =>
          editing ? (
            <>
              <button type="button" class="link" aria-label={`Edit panel ${p.title}`} onClick={() => setPanelEdit({ panel: p, isNew: false })}>
                edit
              </button>
              <button type="button" class="link danger" aria-label={`Remove panel ${p.title}`} onClick={() => change({ panels: d.panels.filter((x) => x.id !== p.id) })}>
                remove
              </button>
            </>
          ) : null
        }
      />
      {panelEdit ? (
        <PanelEditor
          initial={draftOf(panelEdit.panel)}
          onCancel={() => setPanelEdit(null)}
          onSave={(draft) => {
            const p = panelFromDraft(draft, panelEdit.panel);
            change({ panels: panelEdit.isNew ? [...d.panels, p] : d.panels.map((x) => (x.id === p.id ? p : x)) });
            setPanelEdit(null);
          }}
        />
      ) : null}
    </main>
  );
}
