// The Search page's state in the URL (`/search?q=…&from=…&to=…&cols=a,b&order=oldest&sort=status:desc&refresh=30s`),
// so a search is a shareable link; saved searches keep `q`, the range and the columns.
import type { SearchRequest } from '../../api/types';
import { urlOf } from '../../lib/router';
import { REFRESH_PERIODS, parseSort, sortParam, type Order, type Refresh, type SortBy } from '../../lib/searchOptions';
import { DEFAULT_RANGE, type TimeRange } from '../../lib/time';


/** The search state in the URL. */
export interface SearchUrl {
  q: string;
  range: TimeRange;
  cols: string[];
  /** Newest first unless `order=oldest`. */
  order?: Order;
  /** Sorted by a field (`sort=field:asc|desc`) instead of by time. */
  sort?: SortBy | null;
  /** Auto-refresh period, off without one. */
  refresh?: Refresh | null;
}

/** Reads the state from the URL. */
export function readSearchUrl(params: URLSearchParams): SearchUrl {
  const s: SearchUrl = {
    q: params.get('q') ?? '',
    range: { from: params.get('from') || DEFAULT_RANGE.from, to: params.get('to') || DEFAULT_RANGE.to },
    cols: (params.get('cols') ?? '').split(',').filter(Boolean),
  };
  if (params.get('order') === 'oldest') s.order = 'oldest';
  const sort = parseSort(params.get('sort'));
  if (sort) s.sort = sort;
  const r = REFRESH_PERIODS.find((p) => p === params.get('refresh'));
  if (r) s.refresh = r;
  return s;
}

/** The URL of a state. */
export function searchUrl(s: SearchUrl): string {
  return urlOf('/search', {
    q: s.q,
    from: s.range.from === DEFAULT_RANGE.from ? undefined : s.range.from,
    to: s.range.to === DEFAULT_RANGE.to ? undefined : s.range.to,
    cols: s.cols.join(','),
    order: s.order === 'oldest' ? 'oldest' : undefined,
    sort: s.sort ? sortParam(s.sort) : undefined,
    refresh: s.refresh ?? undefined,
  });
}

/** The URL of the search an answer is for (`q`, `from`, `to` as the
 * address bar would carry them), so a reader — the browser tests — can
 * tell a count still answering the previous search from the current one. */
export function answeredUrl(req: SearchRequest | null): string {
  if (!req) return '';
  const range = { from: req.from ?? DEFAULT_RANGE.from, to: req.to ?? DEFAULT_RANGE.to };
  return searchUrl({ q: req.query ?? '', range, cols: [], order: req.order ?? 'newest', sort: parseSort(req.sort ?? null) });
}

/** `cols` with `field` moved one place left (-1) or right (+1). */
export function moveColumn(cols: string[], field: string, dir: -1 | 1): string[] {
  const i = cols.indexOf(field);
  const j = i + dir;
  if (i < 0 || j < 0 || j >= cols.length) return cols;
  const next = [...cols];
  [next[i], next[j]] = [next[j] ?? field, field];
  return next;
}
