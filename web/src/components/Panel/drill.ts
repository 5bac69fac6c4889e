// Drill-down from a dashboard panel to Search (issue 22, missing 8): a
// terms bar, slice or row adds `field:"value"` to the panel's query over the
// dashboard's range; a time bucket narrows the range to that bucket; a
// split-by series adds its value.
import type { Panel } from '../../api/dashboards';
import type { Bucket } from '../../api/types';
import { addFilter, filterText } from '../../lib/query';
import { absolute, type TimeRange } from '../../lib/time';
import { searchUrl } from '../../pages/Search/searchUrl';

/** The field a terms panel counts (none for other panels). */
export function termsField(p: Panel): string | null {
  const a = p.aggs ? Object.values(p.aggs)[0] : undefined;
  return a?.type === 'terms' ? a.field : null;
}

/** The Search URL of a terms bucket's events (null for a key that is no value, e.g. null). */
export function termDrill(p: Panel, key: Bucket['key'], range: TimeRange): string | null {
  const field = termsField(p);
  const value = filterText(key);
  if (!field || value === null) return null;
  return searchUrl({ q: addFilter(p.query, field, value), range, cols: [] });
}

/** The Search URL of a time bucket's events (`startMs` for `intervalMs`),
 * of one split-by value when `split` is given. */
export function bucketDrill(p: Panel, startMs: number, intervalMs: number, split?: { field: string; value: string }): string {
  const q = split ? addFilter(p.query, split.field, split.value) : p.query;
  return searchUrl({ q, range: absolute(startMs, startMs + intervalMs), cols: [] });
}

/** The Search URL of one split-by value's events over the dashboard's range. */
export function seriesDrill(p: Panel, field: string, value: string, range: TimeRange): string {
  return searchUrl({ q: addFilter(p.query, field, value), range, cols: [] });
}
