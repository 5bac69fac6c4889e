// Under a search that found nothing: why it may have (a field no event in
// the range has, lower-case operators), from the query text and the fields
// of the caller's events in the range (GET /api/v1/fields, asked only then).
import { useFields } from '../../hooks/useFields';
import { queryHints } from '../../lib/query';
import type { TimeRange } from '../../lib/time';

/** Props of [`QueryHints`]. */
export interface QueryHintsProps {
  query: string;
  range: TimeRange;
}

/** The hints, or nothing when there are none. */
export function QueryHints({ query, range }: QueryHintsProps) {
  const { data } = useFields(range);
  if (!data) return null;
  const hints = queryHints(query, data.map((f) => f.name));
  if (hints.length === 0) return null;
  return (
    <ul class="query-hints" aria-label="Query hints">
      {hints.map((h) => (
        <li key={h}>{h}</li>
      ))}
    </ul>
  );
}
