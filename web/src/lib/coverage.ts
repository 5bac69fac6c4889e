// The share of the loaded hits that have each field (issue 22, missing 7):
// the field list says how common a field is in the results on screen.
import type { Hit } from '../api/types';
import { getPath } from './format';

/** For each name, how many of `hits` have a non-null value at that path. */
export function coverage(hits: Hit[], names: string[]): Map<string, number> {
  const counts = new Map<string, number>(names.map((n) => [n, 0]));
  for (const h of hits) {
    for (const n of names) {
      const v = getPath(h.event, n);
      if (v !== undefined && v !== null) counts.set(n, (counts.get(n) ?? 0) + 1);
    }
  }
  return counts;
}

/** `n` of `of` as a whole percent, `<1%` for a few in many. */
export function percent(n: number, of: number): string {
  if (of === 0 || n === 0) return '0%';
  const p = Math.round((n / of) * 100);
  return p === 0 ? '<1%' : `${p}%`;
}
