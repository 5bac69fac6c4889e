// Search: query bar (with suggestions), time picker, histogram (drag to
// zoom), results newest or oldest first or by a column, with infinite scroll and
// auto-refresh, field sidebar. The URL holds the state (searchUrl.ts), so
// a search is a shareable link; saved searches keep query, range and
// columns under a name.
import { useState } from 'preact/hooks';
import type { ApiError } from '../../api/client';
import { createDashboard } from '../../api/dashboards';
import { ErrorBox } from '../../components/ErrorBox/ErrorBox';
import { ExportLinks } from '../../components/ExportLinks/ExportLinks';
import { FieldSidebar } from '../../components/FieldSidebar/FieldSidebar';
import { Histogram } from '../../components/Histogram/Histogram';
import { QueryBar } from '../../components/QueryBar/QueryBar';
import { QueryHints } from '../../components/QueryHints/QueryHints';
import { ResultList } from '../../components/ResultList/ResultList';
import { ResultOptions } from '../../components/ResultOptions/ResultOptions';
import { SavedSearches } from '../../components/SavedSearches/SavedSearches';
import { TimePicker } from '../../components/TimePicker/TimePicker';
import { useAggregate } from '../../hooks/useAggregate';
import { useAutoRefresh } from '../../hooks/useAutoRefresh';
import { toApiError } from '../../hooks/useRequest';
import { useSearch } from '../../hooks/useSearch';
import { exact } from '../../lib/format';
import { addFilter } from '../../lib/query';
import { navigate, type Loc } from '../../lib/router';
import { nextSort, refreshMs, sortParam } from '../../lib/searchOptions';
import { absolute } from '../../lib/time';
import { fieldDashboard } from '../Dashboards/model';
import { answeredUrl, moveColumn, readSearchUrl, searchUrl, type SearchUrl } from './searchUrl';

/** The search page. */
export function SearchPage({ loc }: { loc: Loc }) {
  const s = readSearchUrl(loc.params);
  // Submitting the same search again runs it again (relative times move).
  const [run, setRun] = useState(0);
  const [fieldsShown, setFieldsShown] = useState(true);
  const [visualizeError, setVisualizeError] = useState<ApiError | null>(null);
  const order = s.order ?? 'newest';
  const sort = s.sort ? sortParam(s.sort) : null;
  const key = `${s.q}\u0000${s.range.from}\u0000${s.range.to}\u0000${order}\u0000${sort ?? ''}\u0000${run}`;
  const result = useSearch({ query: s.q, from: s.range.from, to: s.range.to, size: 100, order, sort }, key);
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
  const onMoveColumn = (field: string, dir: -1 | 1): void => navigate(searchUrl({ ...s, cols: moveColumn(s.cols, field, dir) }), true);
  const onVisualize = (field: string): void => {
    setVisualizeError(null);
    createDashboard(fieldDashboard(field, s.q, s.range)).then(
      (d) => navigate(`/dashboards/${d.id}?edit=1`),
      (e: unknown) => setVisualizeError(toApiError(e)),
    );
  };
  useAutoRefresh(s.refresh ? refreshMs(s.refresh) : null, () => setRun((r) => r + 1));

  return (
    <div class="search-page">
      <div class="toolbar">
        <button
          type="button"
          class="sidebar-toggle"
          aria-controls="field-sidebar"
          aria-expanded={fieldsShown}
          title={fieldsShown ? 'Hide the field list' : 'Show the field list'}
          onClick={() => setFieldsShown(!fieldsShown)}
        >
          Fields
        </button>
        <QueryBar value={s.q} onSubmit={(q) => go({ q })} error={result.error} range={s.range} />
        <TimePicker value={s.range} onChange={(range) => go({ range })} />
        <SavedSearches current={s} onOpen={(saved) => go(saved)} />
      </div>
      {result.error?.type !== 'query_parse_error' ? <ErrorBox error={result.error} /> : null}
      <ErrorBox error={visualizeError} />
      <div class={fieldsShown ? 'search-body' : 'search-body no-sidebar'}>
        <FieldSidebar query={s.q} range={s.range} columns={s.cols} onFilter={onFilter} onToggleColumn={onToggleColumn} hits={result.hits} onVisualize={onVisualize} />
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
            <ResultOptions
              order={order}
              refresh={s.refresh ?? null}
              sort={s.sort ?? null}
              onOrder={(o) => go({ order: o, sort: null })}
              onRefresh={(r) => navigate(searchUrl({ ...s, refresh: r }), true)}
            />
            {result.total ? <ExportLinks search={{ query: s.q, from: s.range.from, to: s.range.to, columns: s.cols, order, sort }} total={result.total} /> : null}
          </div>
          {h?.type === 'date_histogram' && !result.error ? (
            <Histogram buckets={h.buckets} intervalMs={h.interval_ms} onSelect={(f, t) => go({ range: absolute(f, t) })} />
          ) : null}
          <ErrorBox error={hist.error?.type === 'query_parse_error' ? null : hist.error} />
          {result.total === 0 && !result.loading ? (
            <>
              <p class="empty">No events match this search in this time range.</p>
              <QueryHints query={s.q} range={s.range} onQuery={(q) => go({ q })} />
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
            onMoveColumn={onMoveColumn}
            sort={s.sort ?? null}
            onSort={(field) => go({ sort: nextSort(s.sort ?? null, field) })}
          />
        </main>
      </div>
    </div>
  );
}
