// The result options of Search (issue 22, missing 6): the order of the
// hits, the field sort and the auto-refresh periods.

/** Which hits come first (the API's `order`). */
export type Order = 'newest' | 'oldest';

/** The auto-refresh periods offered (off is null). */
export const REFRESH_PERIODS = ['5s', '30s', '1m'] as const;
/** An auto-refresh period. */
export type Refresh = (typeof REFRESH_PERIODS)[number];

/** Milliseconds of an auto-refresh period. */
export function refreshMs(r: Refresh): number {
  return r === '1m' ? 60_000 : Number(r.slice(0, -1)) * 1000;
}

/** Sort by a field instead of by time (the API's `sort`, `field:asc|desc`). */
export interface SortBy {
  field: string;
  desc: boolean;
}

/** Reads `field:asc|desc` (null for anything else). */
export function parseSort(s: string | null): SortBy | null {
  const m = /^(.+):(asc|desc)$/.exec(s ?? '');
  return m?.[1] && m[1] !== '@timestamp' ? { field: m[1], desc: m[2] === 'desc' } : null;
}

/** The API's `sort` of a field sort. */
export function sortParam(s: SortBy): string {
  return `${s.field}:${s.desc ? 'desc' : 'asc'}`;
}

/** The sort after a click on `field`'s column header: ascending, then
 * descending, then back to time order (null). */
export function nextSort(cur: SortBy | null, field: string): SortBy | null {
  if (cur?.field !== field) return { field, desc: false };
  return cur.desc ? null : { field, desc: true };
}
