// A dashboard as a JSON file and back (issue 22, missing 8): export keeps
// what describes the board (title, description, time, refresh, panels) and
// leaves out who owns and sees it; an import is checked and becomes a new,
// private dashboard of the importer. A duplicated panel takes the first free
// place of its size.
import { GRID_COLUMNS, newPanelId, type Dashboard, type DashboardBody, type Panel } from '../../api/dashboards';
import { firstFreeSlot } from '../../components/DashboardGrid/layout';

/** The `format` field of an exported file. */
export const EXPORT_FORMAT = 'sluice-dashboard/1';

/** The JSON text of a dashboard's export. */
export function exportJson(d: Pick<Dashboard, 'title' | 'description' | 'time' | 'refresh' | 'panels'>): string {
  const { title, description, time, refresh, panels } = d;
  return `${JSON.stringify({ format: EXPORT_FORMAT, title, description, time, refresh, panels }, null, 2)}\n`;
}

/** A `data:` URL of the export, for a download link. */
export function exportHref(d: Pick<Dashboard, 'title' | 'description' | 'time' | 'refresh' | 'panels'>): string {
  return `data:application/json;charset=utf-8,${encodeURIComponent(exportJson(d))}`;
}

/** A file name for the export: the title in lower-case words. */
export function exportName(title: string): string {
  const slug = title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
  return `${slug || 'dashboard'}.json`;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The new dashboard an exported file describes; throws an Error saying what is wrong. */
export function parseImport(text: string): DashboardBody {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!isObj(v)) throw new Error('not a dashboard: expected a JSON object');
  if (v['format'] !== undefined && v['format'] !== EXPORT_FORMAT) throw new Error(`unknown format ${JSON.stringify(v['format'])} (expected ${EXPORT_FORMAT})`);
  if (typeof v['title'] !== 'string' || v['title'].trim() === '') throw new Error('not a dashboard: "title" must be a non-empty string');
  const panels = v['panels'] ?? [];
  if (!Array.isArray(panels)) throw new Error('"panels" must be a list');
  panels.forEach((p: unknown, i) => {
    if (!isObj(p) || typeof p['title'] !== 'string' || typeof p['chart'] !== 'string' || !isObj(p['layout'])) {
      throw new Error(`panel ${i + 1}: expected an object with "title", "chart" and "layout"`);
    }
  });
  const time = isObj(v['time']) && typeof v['time']['from'] === 'string' ? { from: v['time']['from'], to: typeof v['time']['to'] === 'string' ? v['time']['to'] : null } : { from: 'now-1h', to: null };
  return {
    title: v['title'],
    description: typeof v['description'] === 'string' ? v['description'] : '',
    sharing: { everyone: false, groups: [] },
    time,
    refresh: typeof v['refresh'] === 'string' ? v['refresh'] : null,
    // New ids: an import twice into one node gives two independent boards.
    panels: (panels as Panel[]).map((p) => ({ ...p, id: newPanelId(), query: typeof p.query === 'string' ? p.query : '', options: isObj(p.options) ? p.options : {} })),
  };
}

/** `panels` with a copy of `p` ("… (copy)") in the first free place of its size. */
export function duplicatePanel(panels: Panel[], p: Panel): Panel[] {
  const w = Math.min(p.layout.w, GRID_COLUMNS);
  const at = firstFreeSlot(
    panels.map((x) => ({ id: x.id, ...x.layout })),
    w,
    p.layout.h,
  );
  return [...panels, { ...p, id: newPanelId(), title: `${p.title} (copy)`, layout: { ...at, w, h: p.layout.h } }];
}
