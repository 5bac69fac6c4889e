// Hits in the order asked (newest first by default, or by a column: click
// its name): a time column, the
// chosen field columns (or the message; each can move left or right), a row expands to the whole event and its surrounding events. More pages load when the end
// of the list scrolls into view (and with a button, for keyboards).
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Hit } from '../../api/types';
import { getPath, valueText } from '../../lib/format';
import type { SortBy } from '../../lib/searchOptions';
import { formatTime } from '../../lib/time';
import { EventDetail } from '../EventDetail/EventDetail';
import { SurroundingEvents } from '../SurroundingEvents/SurroundingEvents';

/** Props of [`ResultList`]. */
export interface ResultListProps {
  hits: Hit[];
  columns: string[];
  more: boolean;
  loading: boolean;
  onMore: () => void;
  onFilter: (field: string, value: string, negate: boolean) => void;
  onToggleColumn: (field: string) => void;
  /** Moves a column one place left (-1) or right (+1). */
  onMoveColumn?: (field: string, dir: -1 | 1) => void;
  /** The field the hits are sorted by (none: by time). */
  sort?: SortBy | null;
  /** A click on a column's name: sort by it (see `nextSort`). */
  onSort?: (field: string) => void;
}

/** The text of the summary column: `message`, else the whole event. */
export function summary(ev: Record<string, unknown>): string {
  const m = ev['message'];
  if (typeof m === 'string') return m;
  const rest = Object.fromEntries(Object.entries(ev).filter(([k]) => !k.startsWith('@')));
  return JSON.stringify(rest);
}

/** `group/subgroup/host` of an event, empty parts left out. */
export function identity(ev: Record<string, unknown>): string {
  return ['@group', '@subgroup', '@host'].map((k) => ev[k]).filter((v) => typeof v === 'string' && v !== '').join('/');
}

/** The result list. */
export function ResultList({ hits, columns, more, loading, onMore, onFilter, onToggleColumn, onMoveColumn, sort, onSort }: ResultListProps) {
  const [open, setOpen] = useState<Set<string>>(new Set());
  const sentinel = useRef<HTMLDivElement>(null);
  const onMoreRef = useRef(onMore);
  onMoreRef.current = onMore;

  useEffect(() => {
    const el = sentinel.current;
    if (!el || !more || typeof IntersectionObserver === 'undefined') return undefined;
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) onMoreRef.current();
    }, { rootMargin: '400px' });
    io.observe(el);
    return () => io.disconnect();
  }, [more, hits.length]);

  const toggle = (id: string): void => {
    const next = new Set(open);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setOpen(next);
  };

  return (
    <div class="result-list">
      <table>
        <thead>
          <tr>
            <th scope="col" class="time-col">Time</th>
            {columns.length === 0 ? <th scope="col">Event</th> : null}
            {columns.map((c, i) => (
              <th scope="col" key={c} aria-sort={sort?.field === c ? (sort.desc ? 'descending' : 'ascending') : undefined}>
                {onMoveColumn && i > 0 ? (
                  <button type="button" class="link" aria-label={`Move column ${c} left`} onClick={() => onMoveColumn(c, -1)}>
                    ‹
                  </button>
                ) : null}
                {onSort ? (
                  <button type="button" class="link sort" title={`Sort by ${c}`} onClick={() => onSort(c)}>
                    {c}
                    {sort?.field === c ? (sort.desc ? ' ▼' : ' ▲') : ''}
                  </button>
                ) : (
                  c
                )}{' '}
                {onMoveColumn && i < columns.length - 1 ? (
                  <button type="button" class="link" aria-label={`Move column ${c} right`} onClick={() => onMoveColumn(c, 1)}>
                    ›
                  </button>
                ) : null}
                <button type="button" class="link" aria-label={`Remove column ${c}`} onClick={() => onToggleColumn(c)}>
                  ×
                </button>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {hits.map((h) => {
            const expanded = open.has(h.id);
            const ts = Date.parse(String(h.event['@timestamp'] ?? ''));
            return [
              <tr key={h.id} class={`hit${expanded ? ' expanded' : ''}`} data-id={h.id}>
                <td class="time-col">
                  <button type="button" class="link expand" aria-expanded={expanded} aria-label={`Event at ${formatTime(ts)}`} onClick={() => toggle(h.id)}>
                    {expanded ? '▾' : '▸'} {formatTime(ts)}
                  </button>
                </td>
                {columns.length === 0 ? (
                  <td class="summary">
                    <span class="identity">{identity(h.event)}</span> {summary(h.event)}
                  </td>
                ) : null}
                {columns.map((c) => (
                  <td key={c}>{valueText(getPath(h.event, c))}</td>
                ))}
              </tr>,
              expanded ? (
                <tr key={`${h.id}-detail`} class="detail-row">
                  <td colSpan={Math.max(2, columns.length + 1)}>
                    <EventDetail event={h.event} columns={columns} onFilter={onFilter} onToggleColumn={onToggleColumn} />
                    <SurroundingEvents hit={h} />
                  </td>
                </tr>
              ) : null,
            ];
          })}
        </tbody>
      </table>
      <div ref={sentinel} class="list-end">
        {more ? (
          <button type="button" onClick={onMore} disabled={loading}>
            {loading ? 'Loading…' : 'Load more'}
          </button>
        ) : hits.length > 0 ? (
          <span class="muted">End of results</span>
        ) : null}
      </div>
    </div>
  );
}
