// Recently used values kept in this browser (localStorage): the last
// queries run on Search and the last time ranges picked (issue 22).

/** The remembered values under `key`, newest first. */
export function recent(key: string): string[] {
  try {
    const v: unknown = JSON.parse(globalThis.localStorage?.getItem(key) ?? '[]');
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** Puts `value` first under `key` (once), keeping at most `max`. */
export function remember(key: string, value: string, max = 10): void {
  if (value.trim() === '') return;
  const next = [value, ...recent(key).filter((v) => v !== value)].slice(0, max);
  try {
    localStorage.setItem(key, JSON.stringify(next));
  } catch {
    // Storage full or disabled: nothing is remembered.
  }
}

/** Where Search keeps its recent queries. */
export const RECENT_QUERIES = 'sluice.recentQueries';
/** Where the time picker keeps its recent ranges (JSON of each range). */
export const RECENT_RANGES = 'sluice.recentRanges';
