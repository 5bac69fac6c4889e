// Above the results: which hits come first (newest or oldest) and how
// often the search runs again by itself (off, 5 s, 30 s, 1 min; paused
// while the tab is hidden).
import { REFRESH_PERIODS, type Order, type Refresh, type SortBy } from '../../lib/searchOptions';

/** Props of [`ResultOptions`]. */
export interface ResultOptionsProps {
  order: Order;
  refresh: Refresh | null;
  /** Sorted by this field (a column header's choice) instead of by time. */
  sort?: SortBy | null;
  onOrder: (o: Order) => void;
  onRefresh: (r: Refresh | null) => void;
}

/** The sort and auto-refresh choices. */
export function ResultOptions({ order, refresh, sort, onOrder, onRefresh }: ResultOptionsProps) {
  return (
    <span class="result-options">
      <label class="inline">
        Sort
        <select aria-label="Sort" value={sort ? 'field' : order} onChange={(e) => onOrder(e.currentTarget.value === 'oldest' ? 'oldest' : 'newest')}>
          <option value="newest">Newest first</option>
          <option value="oldest">Oldest first</option>
          {sort ? (
            <option value="field">
              By {sort.field}, {sort.desc ? 'largest' : 'smallest'} first
            </option>
          ) : null}
        </select>
      </label>
      <label class="inline">
        Refresh
        <select aria-label="Auto-refresh" value={refresh ?? ''} onChange={(e) => onRefresh(REFRESH_PERIODS.find((p) => p === e.currentTarget.value) ?? null)}>
          <option value="">off</option>
          {REFRESH_PERIODS.map((p) => (
            <option key={p} value={p}>
              every {p}
            </option>
          ))}
        </select>
      </label>
    </span>
  );
}
