// Under a search that found nothing: why it may have (a field no event in
// the range has, lower-case operators), from the query text and the fields
// of the caller's events in the range (GET /api/v1/fields, asked only then);
// free words search `message` only, so a button searches every string field.
import { useFields } from '../../hooks/useFields';
import { allFieldsQuery, queryHints } from '../../lib/query';
import type { TimeRange } from '../../lib/time';

/** Props of [`QueryHints`]. */
export interface QueryHintsProps {
  query: string;
  range: TimeRange;
  /** Runs another query (the "Search all fields" button). */
  onQuery?: (query: string) => void;
}

/** The hints, or nothing when there are none. */
export function QueryHints({ query, range, onQuery }: QueryHintsProps) {
  const { data } = useFields(range);
  if (!data) return null;
  const hints = queryHints(query, data.map((f) => f.name));
  if (hints.length === 0) return null;
  const strings = data.filter((f) => f.types.some((t) => t === 'text' || t === 'keyword')).map((f) => f.name);
  const everywhere = onQuery ? allFieldsQuery(query, strings) : null;
  return (
    <>
      <ul class="query-hints" aria-label="Query hints">
        {hints.map((h) => (
          <li key={h}>{h}</li>
        ))}
      </ul>
      {everywhere ? (
        <p class="query-hints-action">
          <button type="button" class="link" title={everywhere} onClick={() => onQuery?.(everywhere)}>
            Search all fields
          </button>
        </p>
      ) : null}
    </>
  );
}
