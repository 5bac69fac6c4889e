// One dashboard — view with one time range and auto-refresh, export as
// JSON, or edit: add/edit/duplicate/remove panels, drag and resize them on
// the grid, share, save.
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../../api/client';
import { getDashboard, newPanelId, refreshSeconds, saveDashboard, GRID_COLUMNS, type Dashboard, type Panel } from '../../api/dashboards';
import { DashboardGrid } from '../../components/DashboardGrid/DashboardGrid';
import { firstFreeSlot } from '../../components/DashboardGrid/layout';
import { ErrorBox } from '../../components/ErrorBox/ErrorBox';
import { PanelView } from '../../components/Panel/Panel';
import { TimePicker } from '../../components/TimePicker/TimePicker';
import { toApiError } from '../../hooks/useRequest';
import { navigate, useLeaveGuard } from '../../lib/router';
import type { TimeRange } from '../../lib/time';
import { PanelEditor } from './PanelEditor';
import { draftOf, panelFromDraft } from './model';
import { duplicatePanel, exportHref, exportName } from './transfer';

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
  const addPanel = (): void => {
    const w = GRID_COLUMNS / 2;
    const h = 3;
    const at = firstFreeSlot(
      d.panels.map((p) => ({ id: p.id, ...p.layout })),
      w,
      h,
    );
    setPanelEdit({
      isNew: true,
      panel: { id: newPanelId(), title: '', query: '', chart: 'timeseries', options: { metric: 'histogram' }, layout: { ...at, w, h } },
    });
  };

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
        <a class="export-json" href={exportHref(d)} download={exportName(d.title)}>
          Export JSON
        </a>
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
              <button type="button" class="link" aria-label={`Duplicate panel ${p.title}`} onClick={() => change({ panels: duplicatePanel(d.panels, p) })}>
                duplicate
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
