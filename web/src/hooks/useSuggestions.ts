// What the query bar offers under the caret (issue 22, missing 4): field
// names from `GET /api/v1/fields` for the range, the top values of a field
// after `field:` (a terms aggregation over the range), or the recent
// queries when the bar is empty. One request per field, not per keystroke.
import { aggregate, fields } from '../api/search';
import { RECENT_QUERIES, recent } from '../lib/recent';
import { matchFields, type Token } from '../lib/suggest';
import { IDENTITY_FIELDS } from '../lib/query';
import type { TimeRange } from '../lib/time';
import { useRequest } from './useRequest';

/** One suggestion: what it puts in and what kind of thing it is. */
export interface Suggestion {
  kind: 'field' | 'value' | 'recent';
  value: string;
  /** The count of a top value. */
  count?: number;
}

/** Top values offered after `field:`. */
export const SUGGESTED_VALUES = 10;

/** The suggestions for `token` (`text` is the whole query); `range` undefined turns them off. */
export function useSuggestions(text: string, token: Token | null, range: TimeRange | undefined, open: boolean): Suggestion[] {
  const on = open && range !== undefined;
  const names = useRequest(on && token?.kind === 'field' && range ? `fields\u0000${range.from}\u0000${range.to}` : null, (signal) =>
    fields(range ?? null, signal),
  );
  const field = on && token?.kind === 'value' ? token.field : null;
  const values = useRequest(field && range ? `top\u0000${field}\u0000${range.from}\u0000${range.to}` : null, (signal) =>
    aggregate({ query: '', from: range?.from ?? null, to: range?.to ?? null, aggs: { top: { type: 'terms', field: field ?? '', size: SUGGESTED_VALUES } } }, signal),
  );
  if (!on) return [];
  if (text.trim() === '') return recent(RECENT_QUERIES).map((value) => ({ kind: 'recent', value }));
  if (token?.kind === 'field' && names.data) {
    const all = [...IDENTITY_FIELDS, ...names.data.map((f) => f.name).filter((n) => !IDENTITY_FIELDS.includes(n))];
    return matchFields(token.prefix, all).map((value) => ({ kind: 'field', value }));
  }
  if (token?.kind === 'value' && values.data) {
    const top = values.data.aggs['top'];
    if (top?.type !== 'terms') return [];
    const p = token.prefix.toLowerCase();
    return top.buckets
      .map((b) => ({ kind: 'value' as const, value: String(b.key), count: b.count }))
      .filter((s) => s.value !== '' && s.value.toLowerCase().startsWith(p) && s.value !== token.prefix);
  }
  return [];
}
