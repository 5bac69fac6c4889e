// Search: query bar, time picker, histogram (drag to zoom), results newest
// first with infinite scroll, field sidebar. The URL holds the state
// (`/search?q=…&from=…&to=…&cols=a,b`), so a search is a shareable link;
// saved searches keep the same three under a name.
import { useState } from 'preact/hooks';
import type { SearchRequest } from '../api/types';
import { ErrorBox } from '../components/ErrorBox/ErrorBox';
import { ExportLinks } from '../components/ExportLinks/ExportLinks';
import { FieldSidebar } from '../components/FieldSidebar/FieldSidebar';
import { Histogram } from '../components/Histogram/Histogram';
import { QueryBar } from '../components/QueryBar/QueryBar';
import { QueryHints } from '../components/QueryHints/QueryHints';
import { ResultList } from '../components/ResultList/ResultList';
import { SavedSearches } from '../components/SavedSearches/SavedSearches';
import { TimePicker } from '../components/TimePicker/TimePicker';
import { useAggregate } from '../hooks/useAggregate';
import { useSearch } from '../hooks/useSearch';
import { exact } from '../lib/format';
import { addFilter } from '../lib/query';
import { navigate, urlOf, type Loc } from '../lib/router';
import { DEFAULT_RANGE, absolute, type TimeRange } from '../lib/time';

/** The search state in the URL. */
export interface SearchUrl {
  q: string;
  range: TimeRange;
  cols: string[];
}

/** Reads the state from the URL. */
export function readSearchUrl(params: URLSearchParams): SearchUrl {
  return {
    q: params.get('q') ?? '',
    range: { from: params.get('from') || DEFAULT_RANGE.from, to: params.get('to') || DEFAULT_RANGE.to },
    cols: (params.get('cols') ?? '').split(',').filter(Boolean),
  };
}

/** The URL of a state. */
export function searchUrl(s: SearchUrl): string {
  return urlOf('/search', {
    q: s.q,
    from: s.range.from === DEFAULT_RANGE.from ? undefined : s.range.from,
    to: s.range.to === DEFAULT_RANGE.to ? undefined : s.range.to,
    cols: s.cols.join(','),
  });
}

/** The URL of the search an answer is for (`q`, `from`, `to` as the
 * address bar would carry them), so a reader — the browser tests — can
 * tell a count still answering the previous search from the current one. */
function answeredUrl(req: SearchRequest | null): string {
  if (!req) return '';
  const range = { from: req.from ?? DEFAULT_RANGE.from, to: req.to ?? DEFAULT_RANGE.to };
  return searchUrl({ q: req.query ?? '', range, cols: [] });
}

/** The search page. */
export function SearchPage({ loc }: { loc: Loc }) {
  const s = readSearchUrl(loc.params);
  // Submitting the same search again runs it again (relative times move).
  const [run, setRun] = useState(0);
  const key = `${s.q}\u0000${s.range.from}\u0000${s.range.to}\u0000${run}`;
  const result = useSearch({ query: s.q, from: s.range.from, to: s.range.to, size: 100 }, key);
  const hist = useAggregate(
    { query: s.q, from: s.range.from, to: s.range.to, aggs: { h: { type: 'date_histogram', buckets: 60 } } },
    run,
  );
  const h = hist.data?.aggs['h'];

  const go = (next: Partial<SearchUrl>): void => {
    navigate(searchUrl({ ...s, ...next }));
    setRun((r) => r + 1);
  };
  const onFilter = (field: string, value: string, negate: boolean): void => go({ q: addFilter(s.q, field, value, negate) });
  const onToggleColumn = (field: string): void =>
    navigate(searchUrl({ ...s, cols: s.cols.includes(field) ? s.cols.filter((c) => c !== field) : [...s.cols, field] }), true);

  return (
    <div class="search-page">
      <div class="toolbar">
        <QueryBar value={s.q} onSubmit={(q) => go({ q })} error={result.error} range={s.range} />
        <TimePicker value={s.range} onChange={(range) => go({ range })} />
        <SavedSearches current={s} onOpen={(saved) => go(saved)} />
      </div>
      {result.error?.type !== 'query_parse_error' ? <ErrorBox error={result.error} /> : null}
      <div class="search-body">
        <FieldSidebar query={s.q} range={s.range} columns={s.cols} onFilter={onFilter} onToggleColumn={onToggleColumn} />
        <main id="main" class="results" tabIndex={-1}>
          <div class="summary-line" aria-live="polite">
            {result.total !== null ? (
              <span id="hit-count" data-count={result.total} data-request={answeredUrl(result.answered)}>
                {exact(result.total)} {result.total === 1 ? 'hit' : 'hits'}
              </span>
            ) : null}
            {result.tookMs !== null ? <span class="muted"> in {result.tookMs} ms</span> : null}
            {result.loading ? <span class="muted"> — searching…</span> : null}
            {result.hits.length > 0 ? <span class="muted"> · showing {result.hits.length}</span> : null}
            {result.total ? <ExportLinks search={{ query: s.q, from: s.range.from, to: s.range.to, columns: s.cols }} total={result.total} /> : null}
          </div>
          {h?.type === 'date_histogram' && !result.error ? (
            <Histogram buckets={h.buckets} intervalMs={h.interval_ms} onSelect={(f, t) => go({ range: absolute(f, t) })} />
          ) : null}
          <ErrorBox error={hist.error?.type === 'query_parse_error' ? null : hist.error} />
          {result.total === 0 && !result.loading ? (
            <>
              <p class="empty">No events match this search in this time range.</p>
              <QueryHints query={s.q} range={s.range} />
            </>
          ) : null}
          <ResultList
            hits={result.hits}
            columns={s.cols}
            more={result.more}
            loading={result.loading}
            onMore={result.loadMore}
            onFilter={onFilter}
            onToggleColumn={onToggleColumn}
          />
        </main>
      </div>
    </div>
  );
}
