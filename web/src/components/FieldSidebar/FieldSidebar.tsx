// The fields of the caller's events in the time range, each with the share
// of the hits on screen that have it (and a switch to list only those); a
// field opens to its top values in the current search (a terms
// aggregation), each a filter on click.
import { useState } from 'preact/hooks';
import type { FieldInfo, Hit } from '../../api/types';
import { useAggregate } from '../../hooks/useAggregate';
import { useFields } from '../../hooks/useFields';
import { coverage, percent } from '../../lib/coverage';
import { compact, exact } from '../../lib/format';
import type { TimeRange } from '../../lib/time';
import { ErrorBox } from '../ErrorBox/ErrorBox';

/** Props of [`FieldSidebar`]. */
export interface FieldSidebarProps {
  query: string;
  range: TimeRange;
  columns: string[];
  onFilter: (field: string, value: string, negate: boolean) => void;
  onToggleColumn: (field: string) => void;
  /** The hits loaded in the result list (coverage is of these). */
  hits?: Hit[];
  /** "Visualize": a dashboard panel of the field's top values. */
  onVisualize?: (field: string) => void;
}

/** Top values shown per field. */
export const TOP_VALUES = 5;

function TopValues({ field, query, range, onFilter }: { field: string; query: string; range: TimeRange; onFilter: FieldSidebarProps['onFilter'] }) {
  const { data, error, loading } = useAggregate({
    query,
    from: range.from,
    to: range.to,
    aggs: { top: { type: 'terms', field, size: TOP_VALUES } },
  });
  // The share of each value among the hits that have the field (issue 22:
  // not among all hits, where a field of one source in ten looked rare).
  const having = useAggregate({ query: withField(query, field), from: range.from, to: range.to, aggs: {} });
  const res = data?.aggs['top'];
  if (error) return <ErrorBox error={error} />;
  if (!res || res.type !== 'terms' || !having.data) return <p class="muted">{loading || having.loading ? 'Loading…' : ''}</p>;
  const total = having.data.total || 1;
  if (res.buckets.length === 0) return <p class="muted">No values in this search.</p>;
  return (
    <ul class="top-values" aria-label={`Top values of ${field}`} data-with-field={having.data.total}>
      <li class="muted coverage">
        in {exact(having.data.total)} of {exact(data.total)} hits ({Math.round((having.data.total / (data.total || 1)) * 100)}%)
      </li>
      {res.buckets.map((b) => {
        const v = String(b.key);
        return (
          <li key={v}>
            <button type="button" class="link" title={`Filter on ${field}:"${v}"`} onClick={() => onFilter(field, v, false)}>
              <span class="bar" style={{ width: `${Math.round((b.count / total) * 100)}%` }} />
              <span class="v">{v === '' ? '(empty)' : v}</span>
              <span class="n">{compact(b.count)}</span>
            </button>
          </li>
        );
      })}
      {res.other > 0 ? <li class="muted">other: {compact(res.other)}</li> : null}
    </ul>
  );
}

/** `query` narrowed to the events that have `field`. */
export function withField(query: string, field: string): string {
  const q = query.trim();
  return q === '' || q === '*' ? `_exists_:${field}` : `(${q}) AND _exists_:${field}`;
}

/** Identity fields first, then the rest by name. */
export function sortFields(fields: FieldInfo[]): FieldInfo[] {
  return [...fields].sort((a, b) => {
    const ai = a.name.startsWith('@') ? 0 : 1;
    const bi = b.name.startsWith('@') ? 0 : 1;
    return ai - bi || a.name.localeCompare(b.name);
  });
}

/** The sidebar. */
export function FieldSidebar({ query, range, columns, onFilter, onToggleColumn, hits = [], onVisualize }: FieldSidebarProps) {
  const { data, error } = useFields(range);
  const [open, setOpen] = useState<string | null>(null);
  const [filter, setFilter] = useState('');
  const [inHitsOnly, setInHitsOnly] = useState(false);
  const all = sortFields(data ?? []).filter((f) => f.name !== '@timestamp' && f.name.includes(filter));
  const counts = coverage(hits, all.map((f) => f.name));
  const fields = inHitsOnly ? all.filter((f) => (counts.get(f.name) ?? 0) > 0) : all;
  return (
    <aside id="field-sidebar" class="field-sidebar" aria-label="Fields">
      <h2>Fields</h2>
      <input type="search" aria-label="Filter fields" placeholder="Filter fields" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
      <label class="inline muted in-hits-only">
        <input type="checkbox" checked={inHitsOnly} onChange={(e) => setInHitsOnly(e.currentTarget.checked)} /> Only fields in the {exact(hits.length)} hits shown
      </label>
      <ErrorBox error={error} />
      <ul>
        {fields.map((f) => (
          <li key={f.name} class={open === f.name ? 'open' : ''}>
            <div class="field-row">
              <button type="button" class="link field-name" aria-expanded={open === f.name} onClick={() => setOpen(open === f.name ? null : f.name)}>
                <span class="type">{f.types[0]?.[0] ?? '?'}</span> {f.name}
              </button>
              <span class="coverage-pct muted" title={`in ${exact(counts.get(f.name) ?? 0)} of the ${exact(hits.length)} hits shown`}>
                {hits.length > 0 ? percent(counts.get(f.name) ?? 0, hits.length) : ''}
              </span>
              <button
                type="button"
                class="link"
                aria-pressed={columns.includes(f.name)}
                aria-label={`${columns.includes(f.name) ? 'Remove' : 'Add'} column ${f.name}`}
                onClick={() => onToggleColumn(f.name)}
              >
                {columns.includes(f.name) ? '−' : '+'}
              </button>
            </div>
            {open === f.name ? (
              f.name === 'message' ? (
                <p class="muted">Full-text field: no top values. Search its words in the query bar.</p>
              ) : (
                <>
                  <TopValues field={f.name} query={query} range={range} onFilter={onFilter} />
                  {onVisualize ? (
                    <button type="button" class="link visualize" aria-label={`Visualize ${f.name}`} onClick={() => onVisualize(f.name)}>
                      Visualize on a new dashboard
                    </button>
                  ) : null}
                </>
              )
            ) : null}
          </li>
        ))}
      </ul>
    </aside>
  );
}
