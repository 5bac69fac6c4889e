// The result options of Search (issue 22, missing 6): the order of the
// hits and the auto-refresh periods.

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
