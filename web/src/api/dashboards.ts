// Dashboards (docs/specs/ui-api.md §9): list, get, create, save, delete.
// The node stores them; a node without that API (404 on /api/v1/dashboards,
// as before the users backend) keeps them in this browser's localStorage with
// the same shapes and version checks, so the editor works against any node.
import { ApiError, request } from './client';
import type { Aggregation } from './types';

/** How a panel draws its data. */
export type ChartType = 'timeseries' | 'bar' | 'pie' | 'table' | 'number';

/** What a panel computes, as the editor offers it (kept in `options.metric`). */
export type Metric = 'count' | 'histogram' | 'terms' | 'stats' | 'events';

/** The statistic a `stats` number panel shows. */
export type Stat = 'count' | 'min' | 'max' | 'avg' | 'sum';

/** The UI's own panel options (stored as given). */
export interface PanelOptions {
  metric?: Metric;
  stat?: Stat;
  /** Events over time per value of `field`: its `size` most frequent values
   * as separate series (histogram panels). */
  split?: { field: string; size: number };
}

/** A panel's place on the grid, in cells. */
export interface Layout {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** One panel: with `aggs` an aggregation, without a search. */
export interface Panel {
  id: string;
  title: string;
  chart: ChartType;
  query: string;
  aggs?: Record<string, Aggregation>;
  fields?: string[];
  size?: number;
  options: PanelOptions;
  layout: Layout;
}

/** Who besides the owner sees a dashboard. */
export interface Sharing {
  everyone: boolean;
  groups: string[];
}

/** A dashboard. */
export interface Dashboard {
  id: number;
  title: string;
  description: string;
  owner: string;
  sharing: Sharing;
  /** One time range for every panel; `to: null` is now. */
  time: { from: string; to: string | null };
  /** Auto-refresh period (`"30s"`) or null. */
  refresh: string | null;
  panels: Panel[];
  version: number;
  created_at: string;
  updated_at: string;
  can_edit: boolean;
}

/** A list entry. */
export type DashboardSummary = Pick<Dashboard, 'id' | 'title' | 'description' | 'owner' | 'sharing' | 'version' | 'updated_at' | 'can_edit'>;

/** What `POST`/`PUT` take. */
export type DashboardBody = Pick<Dashboard, 'title' | 'description' | 'sharing' | 'time' | 'refresh' | 'panels'> & { version?: number };

/** Grid width in columns. */
export const GRID_COLUMNS = 12;

const LOCAL_KEY = 'sluice.dashboards';

/** Where dashboards live on this node (decided by the first call). */
let backend: 'server' | 'local' | null = null;

/** Whether the dashboards are kept in this browser only. */
export function storedLocally(): boolean {
  return backend === 'local';
}

/** Forgets where dashboards live (tests). */
export function resetBackend(): void {
  backend = null;
}

function local(): Dashboard[] {
  try {
    return JSON.parse(localStorage.getItem(LOCAL_KEY) ?? '[]') as Dashboard[];
  } catch {
    return [];
  }
}

function saveLocal(all: Dashboard[]): void {
  localStorage.setItem(LOCAL_KEY, JSON.stringify(all));
}

function localGet(id: number): Dashboard {
  const d = local().find((x) => x.id === id);
  if (!d) throw new ApiError('not_found', `no dashboard ${id}`, 404);
  return d;
}

async function withFallback<T>(server: () => Promise<T>, browser: () => T): Promise<T> {
  if (backend === 'local') return browser();
  try {
    const r = await server();
    backend = 'server';
    return r;
  } catch (e) {
    // Only a missing route means "no server storage": an unknown id is a
    // 404 too, but by then the backend is known.
    if (backend === null && e instanceof ApiError && e.status === 404 && /no route/.test(e.message)) {
      backend = 'local';
      return browser();
    }
    throw e;
  }
}

/** A new panel id. */
export function newPanelId(): string {
  return `p${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

/** `GET /api/v1/dashboards`. */
export function listDashboards(signal?: AbortSignal): Promise<DashboardSummary[]> {
  return withFallback(
    async () => (await request<{ dashboards: DashboardSummary[] }>('GET', '/api/v1/dashboards', undefined, signal)).dashboards,
    () => local().sort((a, b) => a.title.localeCompare(b.title)),
  );
}

/** `GET /api/v1/dashboards/{id}`. */
export function getDashboard(id: number, signal?: AbortSignal): Promise<Dashboard> {
  return withFallback(() => request<Dashboard>('GET', `/api/v1/dashboards/${id}`, undefined, signal), () => localGet(id));
}

/** `POST /api/v1/dashboards`. */
export function createDashboard(body: DashboardBody): Promise<Dashboard> {
  return withFallback(
    () => request<Dashboard>('POST', '/api/v1/dashboards', body),
    () => {
      const all = local();
      const now = new Date().toISOString();
      const d: Dashboard = {
        ...body,
        id: all.reduce((m, x) => Math.max(m, x.id), 0) + 1,
        owner: 'this browser',
        version: 1,
        created_at: now,
        updated_at: now,
        can_edit: true,
      };
      saveLocal([...all, d]);
      return d;
    },
  );
}

/** `PUT /api/v1/dashboards/{id}` with the version it was based on. */
export function saveDashboard(id: number, body: DashboardBody & { version: number }): Promise<Dashboard> {
  return withFallback(
    () => request<Dashboard>('PUT', `/api/v1/dashboards/${id}`, body),
    () => {
      const old = localGet(id);
      if (old.version !== body.version) throw new ApiError('conflict', 'the dashboard was saved in between; reload it', 409);
      const d: Dashboard = { ...old, ...body, version: old.version + 1, updated_at: new Date().toISOString() };
      saveLocal(local().map((x) => (x.id === id ? d : x)));
      return d;
    },
  );
}

/** `DELETE /api/v1/dashboards/{id}`. */
export function deleteDashboard(id: number): Promise<void> {
  return withFallback(
    () => request<void>('DELETE', `/api/v1/dashboards/${id}`),
    () => saveLocal(local().filter((x) => x.id !== id)),
  );
}

/** Parses `"30s"`, `"5m"`, `"1h"` to seconds (0 for null or junk). */
export function refreshSeconds(r: string | null): number {
  const m = /^(\d+)([smh])$/.exec(r ?? '');
  if (!m) return 0;
  return Number(m[1]) * ({ s: 1, m: 60, h: 3600 }[m[2] as 's' | 'm' | 'h'] ?? 0);
}
